#!/usr/bin/env bash
# A stock KafkaJS consumer group against `runstream dev` (docs/CONSUMERS.md):
# installs kafkajs with npm (npm ci from internal/interop/kafkajs's
# lockfile), builds this checkout's binary, starts `runstream dev` with its
# embedded broker on free loopback ports, in a Postgres schema of its own
# (dropped afterwards) and with the relay's default compression, then runs
# internal/interop/kafkajs/check.mjs: it appends runs through the API and
# checks every record's key, headers, value and partition. No codec plugin
# is registered, so the default compression must be one KafkaJS reads.
# make test runs it (scripts/test.sh); alone it needs Postgres and Redis
# (RUNSTREAM_POSTGRES_URL / RUNSTREAM_REDIS_URL, or scripts/up.sh starts them).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
name=test-kafkajs
. scripts/node-test-lib.sh

require_node 18 "the KafkaJS consumer test (fetch)"
require_servers

cd internal/interop/kafkajs
npm_install

work=$(mktemp -d "${TMPDIR:-/tmp}/runstream-kafkajs-test.XXXXXX")
schema="kjs_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
dev_pid=""
cleanup() {
  if [ -n "$dev_pid" ]; then
    kill "$dev_pid" 2>/dev/null || true
    wait "$dev_pid" 2>/dev/null || true
  fi
  drop_schema "$schema"
  # The projector's snapshots of the test's runs and its tenant's run
  # index (snapshots/keys.go), from the shared Redis; best effort.
  if command -v redis-cli >/dev/null 2>&1 && [ -n "${tenant:-}" ]; then
    index="runstream:runs:{$tenant}"
    for run in $(redis-cli -u "$RUNSTREAM_REDIS_URL" ZRANGE "$index" 0 -1 2>/dev/null); do
      redis-cli -u "$RUNSTREAM_REDIS_URL" DEL "runstream:run:{$run}" >/dev/null 2>&1 || true
    done
    redis-cli -u "$RUNSTREAM_REDIS_URL" DEL "$index" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

build_runstream "$work"
create_schema "$schema"

# A tenant of its own, so the runs it appends stay out of other tenants'
# run lists in the shared Redis.
tenant="tenant_$schema"
token="kjs-token-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
partitions=12
topic="run-events-$schema"
# The output files exist before the process does: the loop below may read
# them before the background job has opened its redirections (a busy
# machine), and a missing file would end the script under set -e.
: >"$work/dev.out"
: >"$work/dev.log"
env -u RUNSTREAM_COMPRESSION RUNSTREAM_POSTGRES_URL="$pg_url" RUNSTREAM_AUTH_TOKENS="$token:$tenant" \
  RUNSTREAM_LOG_FORMAT=json RUNSTREAM_LOG_LEVEL=info \
  "$work/runstream" dev --http-addr 127.0.0.1:0 --broker-addr 127.0.0.1:0 --data-dir "$work/data" \
  --topic "$topic" --partitions "$partitions" --group "runstream-projector-$schema" \
  >"$work/dev.out" 2>"$work/dev.log" &
dev_pid=$!
api="" brokers=""
for _ in $(seq 1 300); do
  api=$(sed -n 's/^ *HTTP API *\(http:[^ ]*\).*/\1/p' "$work/dev.out" | head -1)
  brokers=$(sed -n 's/^ *Kafka .*(kfake) \([0-9.:,]*[0-9]\).*/\1/p' "$work/dev.out" | head -1)
  [ -n "$api" ] && [ -n "$brokers" ] && break
  if ! kill -0 "$dev_pid" 2>/dev/null; then
    echo "test-kafkajs: runstream dev exited:" >&2; cat "$work/dev.out" "$work/dev.log" >&2; exit 1
  fi
  sleep 0.1
done
if [ -z "$api" ] || [ -z "$brokers" ]; then
  echo "test-kafkajs: runstream dev did not print its API and broker addresses within 30s:" >&2
  cat "$work/dev.out" >&2; tail -30 "$work/dev.log" >&2; exit 1
fi

export RUNSTREAM_KJS_API_URL="$api" RUNSTREAM_KJS_TOKEN="$token" RUNSTREAM_KJS_TENANT="$tenant" \
  RUNSTREAM_KJS_BROKERS="$brokers" RUNSTREAM_KJS_TOPIC="$topic" RUNSTREAM_KJS_PARTITIONS="$partitions"
if ! node check.mjs; then
  echo "test-kafkajs: the KafkaJS consumer's checks failed; runstream dev's log:" >&2
  tail -50 "$work/dev.log" >&2
  exit 1
fi
