#!/usr/bin/env bash
# DuckDB's Node API for the checks that read runstream's Parquet files with
# an independent reader (internal/interop/duckdb: npm ci from its
# lockfile, a prebuilt binary, nothing compiles), and Node.js from Debian
# when it is missing. scripts/test-duckdb.sh (make test) and make chaos
# (TestChaos_LakeKill's DuckDB queries after the faults) run it first.
set -euo pipefail
cd "$(dirname "$0")/.."
name=duckdb-deps
. scripts/node-test-lib.sh

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "$name: installing nodejs and npm (Debian packages) for DuckDB's Node API" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
fi
require_node 18 "the DuckDB checks"
cd internal/interop/duckdb
npm_install
