#!/usr/bin/env bash
# make test: installs what the tests need (and builds Jaeger for the trace
# tests, in the background), checks formatting, the alert rules, vet and
# the linter, starts the real servers, then runs every test
# with -race against them: the main module's packages in the foreground,
# and at the same time, in the background, the console's browser tests,
# the API against its OpenAPI document, the TypeScript client and the
# KafkaJS consumer. Missing servers fail (RUNSTREAM_TEST_REQUIRE=1).
#
# Every stage runs even when an earlier one failed, so one run shows every
# failure; the script exits non-zero if any did. It ends with each stage's
# time and the ten slowest packages. Servers this run started (Postgres,
# Redis, the Redis Cluster) are stopped again when it fails or is
# interrupted; after a green run they are left up for the next one, as
# `make up` leaves them.
#
# Needs: Debian as root (apt-get installs the packages below), Go (go.mod's
# version), Node.js 20+ with npm. README.md's "Prerequisites" lists it all.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
t_start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/runstream-test.XXXXXX")
export RUNSTREAM_ARTIFACTS_DIR="${RUNSTREAM_ARTIFACTS_DIR:-$PWD/test-artifacts}"
mkdir -p "$RUNSTREAM_ARTIFACTS_DIR"
timings="$work/timings"
failed=()
bg_pids=()
started_servers=""
started_cluster=""

log() { echo "test: $*" >&2; }

# cleanup: ends the background stages still running (a failure or an
# interrupt), and stops the servers this run started unless it passed.
cleanup() {
  local st=$?
  for pid in "${bg_pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in "${bg_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$st" != 0 ]; then
    if [ -n "$started_cluster" ]; then
      # shellcheck disable=SC2086 # a list of ports
      scripts/redis-cluster.sh stop $started_cluster || true
    fi
    case " $started_servers " in *" redis "*)
      redis-cli -h 127.0.0.1 -p 6379 shutdown nosave >/dev/null 2>&1 || true
      log "stopped the Redis this run started" ;;
    esac
    case " $started_servers " in *" postgres "*)
      pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
      log "stopped the PostgreSQL this run started" ;;
    esac
  fi
  rm -rf "$work"
  exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stage NAME CMD...: runs CMD, records its time, and notes a failure
# without stopping the run.
stage() {
  local name=$1 t0 st
  shift
  t0=$(date +%s)
  log "== $name"
  "$@"
  st=$?
  echo "$name $(( $(date +%s) - t0 ))" >>"$timings"
  if [ "$st" != 0 ]; then
    failed+=("$name")
    log "FAILED: $name (exit status $st)"
  fi
  return 0
}

# long_stage NAME CMD...: stage NAME for a long command, run in a process
# group of its own that the script waits for: bash runs a trap only once
# the foreground command it is in has ended, so an interrupt during a
# foreground go test would wait for all of it before cleaning up, while a
# wait is interrupted at once and cleanup ends the group.
long_stage() {
  local name=$1 t0 st pid
  shift
  t0=$(date +%s)
  log "== $name"
  setsid bash -c '"$@"' bash "$@" &
  pid=$!
  bg_pids+=("$pid")
  wait "$pid"
  st=$?
  echo "$name $(( $(date +%s) - t0 ))" >>"$timings"
  if [ "$st" != 0 ]; then
    failed+=("$name")
    log "FAILED: $name (exit status $st)"
  fi
  return 0
}

# bg_stage NAME CMD...: stage NAME in the background, in a process group of
# its own (so that cleanup can end all of it), its output kept in a file
# and printed when it ends (bg_wait).
bg_stage() {
  local name=$1
  shift
  setsid bash -c '"$@"; st=$?; date +%s >"$0"; exit $st' "$work/$name.end" "$@" >"$work/$name.log" 2>&1 &
  bg_pids+=($!)
  echo "$name $! $(date +%s)" >>"$work/bg"
  log "== $name (in the background; its output follows when it ends)"
}

# bg_wait: waits for every background stage, in order, printing each one's
# output and recording its time and outcome.
bg_wait() {
  local name pid t0 st
  while read -r name pid t0; do
    wait "$pid"
    st=$?
    # The stage's own end, not when it was waited for.
    echo "$name $(( $(cat "$work/$name.end" 2>/dev/null || date +%s) - t0 ))" >>"$timings"
    echo "---- $name" >&2
    cat "$work/$name.log" >&2
    if [ "$st" != 0 ]; then
      failed+=("$name")
      log "FAILED: $name (exit status $st)"
    fi
  done <"$work/bg"
  bg_pids=()
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

install_packages() {
  # Independent Kafka clients for the interop tests (librdkafka's kcat).
  if ! command -v kcat >/dev/null 2>&1; then
    log "installing kcat (Debian package) for the Kafka interop tests"
    apt_install kcat || return 1
  fi
  # Prometheus (Debian package): promtool checks and unit-tests the alert
  # rules, and internal/opstest's scrape test runs /usr/bin/prometheus.
  # --no-install-recommends leaves out prometheus-node-exporter. The
  # package's postinst asks invoke-rc.d or systemd to start a service on
  # :9090: in a container policy-rc.d or the absence of systemd refuses it
  # harmlessly; elsewhere we stop and disable what we just installed (the
  # tests start their own Prometheus on free loopback ports).
  if ! command -v promtool >/dev/null 2>&1 || [ ! -x /usr/bin/prometheus ]; then
    log "installing prometheus (Debian package) for promtool and the scrape test"
    apt_install --no-install-recommends prometheus ||
      log "installing prometheus reported an error (a service that could not start?); checking the binaries"
    if [ -d /run/systemd/system ]; then
      systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    elif [ -x /etc/init.d/prometheus ]; then
      /etc/init.d/prometheus stop >/dev/null 2>&1 || true
      update-rc.d prometheus disable >/dev/null 2>&1 || true
    fi
    if ! command -v promtool >/dev/null 2>&1 || [ ! -x /usr/bin/prometheus ]; then
      log "promtool or /usr/bin/prometheus is still missing after installing prometheus"
      return 1
    fi
  fi
  # Headless Chromium for the console's browser tests
  # (internal/httpapi/console/browsertest, a module of its own).
  if [ ! -x /usr/bin/chromium ]; then
    log "installing chromium (Debian package) for the console's browser tests"
    apt_install chromium || return 1
  fi
  # ip netns and iptables for the partition tests (internal/testenv/netns.go).
  scripts/netns-deps.sh
}

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path '*/node_modules/*'))
  if [ -n "$unformatted" ]; then
    log "gofmt would change:"
    echo "$unformatted" >&2
    return 1
  fi
}

# The alert rules: syntax, then their unit tests (deploy/prometheus).
alert_rules() {
  promtool check rules deploy/prometheus/alerts.yml &&
    promtool test rules deploy/prometheus/alerts_test.yml &&
    promtool check config deploy/prometheus/prometheus.yml >/dev/null
}

servers() {
  local env
  env=$(scripts/up.sh) || return 1
  eval "$env"
  started_servers=$RUNSTREAM_UP_STARTED
  # A three-master Redis Cluster on 127.0.0.1:7101-7103 for the
  # projector's cluster tests (exports RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS).
  env=$(scripts/redis-cluster.sh) || return 1
  eval "$env"
  started_cluster=$RUNSTREAM_CLUSTER_STARTED
  export RUNSTREAM_TEST_POSTGRES_URL="${RUNSTREAM_TEST_POSTGRES_URL:-$RUNSTREAM_POSTGRES_URL}"
  export RUNSTREAM_TEST_REDIS_URL="${RUNSTREAM_TEST_REDIS_URL:-$RUNSTREAM_REDIS_URL}"
  export RUNSTREAM_TEST_REQUIRE=1
}

# The check of our writes and records against the peer implementation's own
# JSON Schemas (internal/testenv.PeerSchemas) runs only where its interop
# data is: RUNSTREAM_PEER_DIR, by default the shared/peer folder beside the
# checkout. Everything else the tests take from it is copied into
# testdata/ (testdata/README.md).
peer_line() {
  local dir=${RUNSTREAM_PEER_DIR:-../shared/peer}
  case "$dir" in /*) ;; *) dir="$root/$dir" ;; esac
  if [ -d "$dir/schemas" ]; then
    echo "peer schema check: runs, RUNSTREAM_PEER_DIR=${RUNSTREAM_PEER_DIR:-../shared/peer}"
  else
    echo "peer schema check: skipped, RUNSTREAM_PEER_DIR=${RUNSTREAM_PEER_DIR:-../shared/peer} not found"
  fi
}

# The linter: staticcheck with runstream's own checks (internal/lint,
# configured by staticcheck.conf), built from this module at the version
# go.mod pins, so a fresh machine needs nothing else. It loads the
# packages with -race, as the tests build them, so that the two share
# one compilation of every package instead of compiling it twice.
lint_build() {
  go build -o "$work/runstream-lint" ./internal/lint/cmd/runstream-lint
}
lint() {
  (cd "${1:-.}" && GOFLAGS="-race ${GOFLAGS:-}" "$work/runstream-lint" ./...)
}

# The OpenAPI contract test builds libopenapi and its validator without the
# race detector's instrumentation (-race=false for their packages): a spec
# validator needs none, and compiling it instrumented took most of the
# stage's time. runstream's own packages, which the test serves, keep it.
openapi_norace='-gcflags=github.com/pb33f/...=-race=false -gcflags=github.com/bahlo/...=-race=false -gcflags=github.com/basgys/...=-race=false -gcflags=github.com/buger/...=-race=false -gcflags=github.com/go-openapi/...=-race=false'

# The nested modules keep chromedp and libopenapi out of the main module's
# dependencies (each builds this checkout through a replace directive).
# -vet=all runs vet inside go test, on the same build: each module's
# packages are compiled once. They hold tests only, and the linter is not
# run on them here (`make lint` does): staticcheck analyses every
# dependency of what it checks, and chromedp's and libopenapi's took
# minutes for a few test files.
browser_tests() {
  cd internal/httpapi/console/browsertest &&
    go test -race -vet=all -count=1 -timeout 10m ./...
}
openapi_tests() {
  cd internal/httpapi/openapitest &&
    # shellcheck disable=SC2086 # a list of flags
    go test -race $openapi_norace -vet=all -count=1 -timeout 5m ./...
}

# The other clients, in the background after the nested modules: the
# TypeScript producer client (clients/typescript: npm ci from its lockfile,
# the generated API types checked against internal/httpapi/openapi.json,
# node's test runner against this checkout's `runstream api`; Node.js 20+)
# and a stock KafkaJS consumer group reading what `runstream dev` relays
# (internal/interop/kafkajs; Node.js 18+).
clients_tests() {
  local st=0
  scripts/test-typescript.sh || st=1
  scripts/test-kafkajs.sh || st=1
  # The archive read by DuckDB's Node API with no runstream code
  # (docs/ARCHIVE.md; internal/interop/duckdb).
  scripts/test-duckdb.sh || st=1
  return $st
}

# slowest_packages: the ten slowest packages of the main module's run.
slowest_packages() {
  awk '$1 == "ok" || $1 == "FAIL" { if ($3 ~ /s$/) { t = $3; sub(/s$/, "", t); print t "s", $2 } }' "$work/gotest.log" |
    sed 's#github.com/runstream/runstream/##' | sort -rn | head -10
}

stage install install_packages
# Jaeger for the trace tests (testenv.StartJaeger): scripts/jaeger-deps.sh
# builds it from internal/testenv/jaegertool into a cache outside the
# checkout, once (three minutes alone from an empty Go build cache on two
# cores, seconds from a warm one, nothing when it is there), so it starts
# here in the background, and the stages running tests wait for it
# (jaeger-wait) and get RUNSTREAM_JAEGER_BINARY from what it printed.
jaeger_build() {
  scripts/jaeger-deps.sh >"$1"
}
export -f jaeger_build
bg_stage jaeger jaeger_build "$work/jaeger.env"
stage gofmt gofmt_check
stage alert-rules alert_rules
stage servers servers
peer_line
# The runstream binary that the tests running it as processes share
# (chaos, the scrape test, bench project, the console's dev test;
# testenv.BuildRunstream): built once here, plain (no -race), in the
# background while the linter builds and runs, instead of once per such
# package, several at once, each compiling every dependency again.
export RUNSTREAM_TEST_BINARY="$work/bin/runstream"
binary_build() {
  go build -o "$RUNSTREAM_TEST_BINARY" ./cmd/runstream
}
export -f binary_build
bg_stage binary binary_build
stage lint-build lint_build
if [ ! -x "$work/runstream-lint" ]; then
  log "the linter did not build; stopping here"
  exit 1
fi
export work
export -f lint log
long_stage lint lint .
long_stage vet go vet -race ./...

# The lint and vet stages compiled every package of the main module with
# -race; from here the background stages and the main module's tests reuse
# those compilations.
export -f browser_tests openapi_tests clients_tests
export openapi_norace
# The stages below run the binary: wait for its build (bg_wait would
# report it at the end with the others).
# bg_pid NAME: the process of background stage NAME.
bg_pid() {
  awk -v name="$1" '$1 == name { print $2 }' "$work/bg"
}
wait_binary() {
  wait "$(bg_pid binary)"
  if [ ! -x "$RUNSTREAM_TEST_BINARY" ]; then
    log "the runstream binary did not build:"
    cat "$work/binary.log" >&2
    return 1
  fi
}
stage binary-wait wait_binary
# The trace tests run Jaeger: wait for its build and export
# RUNSTREAM_JAEGER_BINARY to the stages below.
wait_jaeger() {
  wait "$(bg_pid jaeger)"
  if ! grep -q '^export RUNSTREAM_JAEGER_BINARY=' "$work/jaeger.env" 2>/dev/null; then
    log "Jaeger did not build (scripts/jaeger-deps.sh):"
    cat "$work/jaeger.log" >&2
    return 1
  fi
  eval "$(cat "$work/jaeger.env")"
}
stage jaeger-wait wait_jaeger
bg_stage browser browser_tests
bg_stage openapi openapi_tests
bg_stage clients clients_tests
# One package's tests per core (go test's default). Four at once kept the
# cores busier (-p 2: 313 s of wall time for 323 s of CPU; -p 4: 206 s for
# 288 s, warm cache), but under that load TestChaos once failed to converge
# after its Redis was emptied: not used until that is understood.
long_stage go-test bash -c 'set -o pipefail; go test -race -count=1 -timeout 15m ./... 2>&1 | tee "$0"' "$work/gotest.log"
bg_wait

echo "test: stage times (s):" >&2
sort -k2 -rn "$timings" | awk '{printf "  %-12s %5d\n", $1, $2}' >&2
echo "test: the ten slowest packages of the main module:" >&2
slowest_packages | sed 's/^/  /' >&2
total=$(( $(date +%s) - t_start ))
if [ ${#failed[@]} -gt 0 ]; then
  log "FAILED after ${total}s: ${failed[*]}"
  exit 1
fi
log "all stages passed in ${total}s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
