#!/usr/bin/env bash
# The archive read by a stock tool with no runstream code (docs/ARCHIVE.md):
# internal/interop/duckdb/gen writes a small archive with internal/archive
# (Hive layout, two tenants, two dates) and what it wrote as expected.json;
# then DuckDB, through its Node API (@duckdb/node-api, npm ci from
# internal/interop/duckdb's lockfile; a prebuilt binary, nothing compiles),
# reads the files with read_parquet(..., hive_partitioning = true) and
# check.mjs compares the column types, every row, a per-tenant aggregate
# and JSON reads of the payload. Needs no server.
#
# Then the lake (docs/LAKE.md): TestLake_DuckDB has `runstream lake`'s
# sink write a lake from a topic (kfake) fed by a real store, and lake.mjs
# runs each of docs/LAKE.md's queries, as the doc writes them, on the
# files; every answer must equal the same computation over the store.
# Needs Postgres (RUNSTREAM_TEST_POSTGRES_URL; skipped without it, a
# failure with RUNSTREAM_TEST_REQUIRE=1). make test runs it
# (scripts/test.sh); it installs Node.js from Debian when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
name=test-duckdb

scripts/duckdb-deps.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/runstream-duckdb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

go run ./internal/interop/duckdb/gen -dir "$work"
cd internal/interop/duckdb
node check.mjs "$work"

cd "$root"
if [ -n "${RUNSTREAM_TEST_POSTGRES_URL:-}" ]; then
  RUNSTREAM_TEST_DUCKDB_LAKE=1 go test -count=1 -run 'TestLake_DuckDB$' ./internal/interop/duckdb/
elif [ "${RUNSTREAM_TEST_REQUIRE:-}" = 1 ]; then
  echo "$name: the lake check needs Postgres: set RUNSTREAM_TEST_POSTGRES_URL" >&2
  exit 1
else
  echo "$name: skipping the lake check (no RUNSTREAM_TEST_POSTGRES_URL)" >&2
fi
