#!/usr/bin/env bash
# make bench: start the real servers, then measure the append path over HTTP
# against its pgbench baseline, taken on the same machine in the same run:
# single events (target: 60% of pgbench) and 100-event batches (target: 70%).
# Prints both reports and writes them as JSON to bench/results/latest-append.json.
#
#   BENCH_DURATION=10s   measured window of each run (and pgbench -T)
#   extra arguments go to both `runstream bench append` runs, e.g.
#   scripts/bench.sh --clients 32
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/up.sh)"
duration="${BENCH_DURATION:-10s}"
bin=bin/runstream
[ -x "$bin" ] || go build -o "$bin" ./cmd/runstream

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for batch in 1 100; do
  echo "== $bin bench append --baseline --batch $batch --duration $duration $*" >&2
  "$bin" bench append --baseline --batch "$batch" --duration "$duration" \
    --json-file "$tmp/batch$batch.json" "$@"
  echo
done

mkdir -p bench/results
out=bench/results/latest-append.json
{
  printf '{\n  "generatedAt": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '  "commit": "%s",\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf '  "cpus": %s,\n' "$(nproc 2>/dev/null || echo 0)"
  printf '  "single": '
  sed '2,$s/^/  /; $s/$/,/' "$tmp/batch1.json"
  printf '  "batch100": '
  sed '2,$s/^/  /' "$tmp/batch100.json"
  printf '}\n'
} >"$out"
echo "wrote $out" >&2
