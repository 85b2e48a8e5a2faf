// Package duckdb holds runstream's checks with DuckDB, an independent
// reader of its Parquet files (through DuckDB's Node API, no runstream
// code): gen writes a small archive that check.mjs reads, and
// TestLake_DuckDB has `runstream lake`'s sink write a lake that lake.mjs
// queries with docs/LAKE.md's queries. scripts/test-duckdb.sh runs both.
package duckdb
