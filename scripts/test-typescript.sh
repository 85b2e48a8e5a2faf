#!/usr/bin/env bash
# The TypeScript producer client's tests (clients/typescript), against a
# real `runstream api`: installs the dev dependencies with npm (npm ci from
# the lockfile), checks that src/api.ts was generated from the current
# internal/httpapi/openapi.json, builds this checkout's binary, starts it on
# a free loopback port with RUNSTREAM_AUTH_TOKENS in a Postgres schema of its
# own (dropped afterwards), then runs the tests with node's test runner.
# make test runs it (scripts/test.sh); alone it needs Postgres and Redis
# (RUNSTREAM_POSTGRES_URL / RUNSTREAM_REDIS_URL, or scripts/up.sh starts them).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "test-typescript: node and npm are required for clients/typescript (Node.js 20 or later); install them (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "test-typescript: clients/typescript needs Node.js 20 or later, found $(node --version)" >&2
  exit 1
fi
if [ -z "${RUNSTREAM_POSTGRES_URL:-}" ] || [ -z "${RUNSTREAM_REDIS_URL:-}" ]; then
  eval "$(scripts/up.sh)"
fi
if ! command -v psql >/dev/null 2>&1; then
  echo "test-typescript: psql is required (it creates the test's Postgres schema)" >&2
  exit 1
fi

cd clients/typescript
# npm ci from the lockfile, skipped when node_modules was installed from
# this very lockfile (a stamp of its hash).
if [ -f package-lock.json ]; then
  lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ "$(cat node_modules/.runstream-lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
    npm ci --no-audit --no-fund --loglevel=error >&2
    echo "$lock_sum" >node_modules/.runstream-lock-sha256
  fi
else
  npm install --no-audit --no-fund --loglevel=error >&2
fi
npm run --silent check-gen

work=$(mktemp -d "${TMPDIR:-/tmp}/runstream-ts-test.XXXXXX")
schema="ts_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
api_pid=""
cleanup() {
  if [ -n "$api_pid" ]; then
    kill "$api_pid" 2>/dev/null || true
    wait "$api_pid" 2>/dev/null || true
  fi
  psql -q "$RUNSTREAM_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

t0=$(date +%s)
(cd "$root" && go build -o "$work/runstream" ./cmd/runstream)
echo "test-typescript: built runstream in $(( $(date +%s) - t0 ))s" >&2
psql -q -v ON_ERROR_STOP=1 "$RUNSTREAM_POSTGRES_URL" -c "CREATE SCHEMA $schema" >/dev/null
case "$RUNSTREAM_POSTGRES_URL" in
  *\?*) pg_url="$RUNSTREAM_POSTGRES_URL&search_path=$schema" ;;
  *) pg_url="$RUNSTREAM_POSTGRES_URL?search_path=$schema" ;;
esac

token="ts-token-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
other="ts-other-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
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
  RUNSTREAM_TS_OTHER_TOKEN="$other" RUNSTREAM_PEER_DIR="$root/../shared/peer"
if ! npm test --silent; then
  echo "test-typescript: the tests failed; the API's log:" >&2
  tail -50 "$work/api.log" >&2
  exit 1
fi
