#!/usr/bin/env bash
# The TypeScript producer client's tests (clients/typescript), against a
# real `runstream api`: installs the dev dependencies with npm (npm ci from
# the lockfile), checks that src/api.ts was generated from the current
# internal/httpapi/openapi.json, builds this checkout's binary, starts it on
# a free loopback port with RUNSTREAM_AUTH_TOKENS in a Postgres schema of its
# own (dropped afterwards), then runs the tests with node's test runner
# (npm test: the type tests of test-types/ with tsc --noEmit first).
# make test runs it (scripts/test.sh); alone it needs Postgres and Redis
# (RUNSTREAM_POSTGRES_URL / RUNSTREAM_REDIS_URL, or scripts/up.sh starts them).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
name=test-typescript
. scripts/node-test-lib.sh

require_node 20 "clients/typescript"
require_servers

cd clients/typescript
npm_install
npm run --silent check-gen
# The reference docs (TypeDoc) build without a warning: every link resolves.
npm run --silent check-docs

work=$(mktemp -d "${TMPDIR:-/tmp}/runstream-ts-test.XXXXXX")
schema="ts_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
api_pid=""
cleanup() {
  if [ -n "$api_pid" ]; then
    kill "$api_pid" 2>/dev/null || true
    wait "$api_pid" 2>/dev/null || true
  fi
  drop_schema "$schema"
  rm -rf "$work"
}
trap cleanup EXIT

build_runstream "$work"
create_schema "$schema"

token="ts-token-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
other="ts-other-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
# The log exists before the process does: the loop below may read it
# before the background job has opened its redirection (a busy machine),
# and a missing file would end the script under set -e.
: >"$work/api.log"
RUNSTREAM_POSTGRES_URL="$pg_url" RUNSTREAM_HTTP_ADDR=127.0.0.1:0 \
  RUNSTREAM_AUTH_TOKENS="$token:tenant_ts,$other:tenant_other" \
  RUNSTREAM_LOG_FORMAT=json RUNSTREAM_LOG_LEVEL=info \
  "$work/runstream" api >"$work/api.log" 2>&1 &
api_pid=$!
addr=""
for _ in $(seq 1 300); do
  addr=$(sed -n 's/.*"msg":"HTTP API listening".*"addr":"\([0-9.:]*\)".*/\1/p' "$work/api.log" | head -1)
  [ -n "$addr" ] && break
  if ! kill -0 "$api_pid" 2>/dev/null; then
    echo "test-typescript: runstream api exited:" >&2; cat "$work/api.log" >&2; exit 1
  fi
  sleep 0.1
done
if [ -z "$addr" ]; then
  echo "test-typescript: runstream api did not say where it listens within 30s:" >&2; cat "$work/api.log" >&2; exit 1
fi

export RUNSTREAM_TS_API_URL="http://$addr" RUNSTREAM_TS_TOKEN="$token" RUNSTREAM_TS_TENANT=tenant_ts \
  RUNSTREAM_TS_OTHER_TOKEN="$other"
if ! npm test --silent; then
  echo "test-typescript: the tests failed; the API's log:" >&2
  tail -50 "$work/api.log" >&2
  exit 1
fi
