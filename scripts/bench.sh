#!/usr/bin/env bash
# make bench: start the real servers, then
#  1. measure the append path over HTTP against its pgbench baseline, taken
#     on the same machine in the same run: single events (target: 60% of
#     pgbench) and 100-event batches (target: 70%); writes
#     bench/results/latest-append.json;
#  2. measure the outbox relay (`runstream bench relay`): drain of a
#     1,000,000-event backlog (target: >= 50,000 events/s) and commit-to-ack
#     latency at 2,000 events/s (target: p99 < 20 ms), right after the drain
#     and again on its own in the steady state (over a 100,000-event
#     history); writes bench/results/latest-relay.json;
#  3. measure the projector (`runstream bench project`): memory with 100,000
#     active runs (target: < 300 MB RSS), catch-up of a 1,000,000-event topic
#     against the guarded Lua script alone on the same Redis (target: >= 50%)
#     and append-to-snapshot-visible latency at 1,000 events/s (target: p99
#     < 50 ms); writes bench/results/latest-project.json.
#
#   BENCH_DURATION=10s      measured window of each append run (and pgbench -T),
#                           and the relay's and the projector's latency phases
#   BENCH_RELAY_ARGS="..."  extra flags of `runstream bench relay`,
#                           e.g. "--events 200000 --brokers 127.0.0.1:9092"
#   BENCH_PROJECT_ARGS="..." extra flags of `runstream bench project`,
#                           e.g. "--events 200000 --memory=false"
#   BENCH_ONLY=append|relay|project|etl|read|export  run one of them
#   extra arguments go to both `runstream bench append` runs, e.g.
#   scripts/bench.sh --clients 32
#  etl. measure the analytics ETL (`runstream bench etl`): records/s of a
#     1,000,000-record, 12-partition topic through the consumer library into
#     the Postgres sink, against a plain batched INSERT of the same rows in
#     the same run, three rounds, the median reported (target: >= 50%);
#     writes bench/results/latest-etl.json (about a minute).
#     BENCH_ETL_ARGS="..." extra flags, e.g. "--rounds 1";
#     BENCH_ONLY=etl runs it alone.
#  export. measure `runstream export` (`runstream bench export`): events/s of
#     300,000 events' NDJSON against a plain COPY (SELECT ...) TO STDOUT of
#     the same rows, alternated, three rounds, the median reported (target:
#     >= 50%); writes bench/results/latest-export.json. BENCH_EXPORT_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/up.sh)"
duration="${BENCH_DURATION:-10s}"
only="${BENCH_ONLY:-}"
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }
bin=bin/runstream
# Always rebuild (incremental, quick): a stale binary may lack a benchmark.
go build -o "$bin" ./cmd/runstream

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p bench/results
header() {
  printf '{\n  "generatedAt": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '  "commit": "%s",\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf '  "cpus": %s,\n' "$(nproc 2>/dev/null || echo 0)"
  printf '  "loadAverage": "%s",\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
}

if want append; then
  for batch in 1 100; do
    echo "== $bin bench append --baseline --batch $batch --duration $duration $*" >&2
    "$bin" bench append --baseline --batch "$batch" --duration "$duration" \
      --json-file "$tmp/batch$batch.json" "$@"
    echo
  done
  out=bench/results/latest-append.json
  {
    header
    printf '  "single": '
    sed '2,$s/^/  /; $s/$/,/' "$tmp/batch1.json"
    printf '  "batch100": '
    sed '2,$s/^/  /' "$tmp/batch100.json"
    printf '}\n'
  } >"$out"
  echo "wrote $out" >&2
fi

if want relay; then
  # shellcheck disable=SC2086 # BENCH_RELAY_ARGS is a list of flags
  echo "== $bin bench relay --duration $duration ${BENCH_RELAY_ARGS:-}" >&2
  # shellcheck disable=SC2086
  "$bin" bench relay --duration "$duration" --json-file "$tmp/relay.json" ${BENCH_RELAY_ARGS:-}
  # The latency phase above follows the drain's million-row bulk load, which
  # Postgres is still writing out; the steady state (a relay that has been
  # running over a 100,000-event history) is measured on its own.
  echo "== $bin bench relay --drain=false --events 100000 --duration $duration ${BENCH_RELAY_ARGS:-}" >&2
  # shellcheck disable=SC2086
  "$bin" bench relay --drain=false --events 100000 --duration "$duration" --json-file "$tmp/relay-steady.json" ${BENCH_RELAY_ARGS:-}
  out=bench/results/latest-relay.json
  {
    header
    printf '  "relay": '
    sed '2,$s/^/  /' "$tmp/relay.json" | sed '$s/$/,/'
    printf '  "relaySteadyState": '
    sed '2,$s/^/  /' "$tmp/relay-steady.json"
    printf '}\n'
  } >"$out"
  echo "wrote $out" >&2
fi

if want project; then
  # shellcheck disable=SC2086 # BENCH_PROJECT_ARGS is a list of flags
  echo "== $bin bench project --duration $duration ${BENCH_PROJECT_ARGS:-}" >&2
  # shellcheck disable=SC2086
  "$bin" bench project --duration "$duration" --json-file "$tmp/project.json" ${BENCH_PROJECT_ARGS:-}
  out=bench/results/latest-project.json
  {
    header
    printf '  "project": '
    sed '2,$s/^/  /' "$tmp/project.json"
    printf '}\n'
  } >"$out"
  echo "wrote $out" >&2
fi

if [ -z "$only" ] || [ "$only" = etl ]; then
  # shellcheck disable=SC2086 # BENCH_ETL_ARGS is a list of flags
  echo "== $bin bench etl ${BENCH_ETL_ARGS:-}" >&2
  # shellcheck disable=SC2086
  "$bin" bench etl --json-file "$tmp/etl.json" ${BENCH_ETL_ARGS:-}
  out=bench/results/latest-etl.json
  {
    header
    printf '  "etl": '
    sed '2,$s/^/  /' "$tmp/etl.json"
    printf '}\n'
  } >"$out"
  echo "wrote $out" >&2
fi

if want read; then
  # Both SSE shapes (1,000 watchers of one run; 10,000 over 1,000 runs),
  # each against the raw fan-out baseline, 3 rounds: about 3 minutes.
  echo "== $bin bench read --duration $duration" >&2
  "$bin" bench read --duration "$duration" --json >"$tmp/read.json"
  out=bench/results/latest-read.json
  {
    header
    printf '  "read": '
    sed '2,$s/^/  /' "$tmp/read.json"
    printf '}\n'
  } >"$out"
  echo "wrote $out" >&2
fi

if want export; then
  # shellcheck disable=SC2086 # BENCH_EXPORT_ARGS is a list of flags
  echo "== $bin bench export ${BENCH_EXPORT_ARGS:-}" >&2
  # shellcheck disable=SC2086
  "$bin" bench export --json-file "$tmp/export.json" ${BENCH_EXPORT_ARGS:-}
  out=bench/results/latest-export.json
  {
    header
    printf '  "export": '
    sed '2,$s/^/  /' "$tmp/export.json"
    printf '}\n'
  } >"$out"
  echo "wrote $out" >&2
fi
