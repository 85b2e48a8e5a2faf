#!/usr/bin/env bash
# make test: start the real servers, check formatting and vet, then run every
# test with -race against them. Missing servers fail (RUNSTREAM_TEST_REQUIRE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/up.sh)"
# A three-master Redis Cluster on 127.0.0.1:7101-7103 for the projector's
# cluster tests (exports RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS).
eval "$(scripts/redis-cluster.sh)"
# Independent Kafka clients for the interop tests (librdkafka's kcat).
if ! command -v kcat >/dev/null 2>&1; then
  echo "test: installing kcat (Debian package) for the Kafka interop tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >&2
fi
# Prometheus (Debian package): promtool checks and unit-tests the alert rules
# below, and internal/opstest's scrape test runs /usr/bin/prometheus.
# --no-install-recommends leaves out prometheus-node-exporter. The package's
# postinst asks invoke-rc.d or systemd to start a service on :9090: in a
# container policy-rc.d or the absence of systemd refuses it harmlessly;
# elsewhere we stop and disable what we just installed (the tests start
# their own Prometheus on free loopback ports).
if ! command -v promtool >/dev/null 2>&1 || [ ! -x /usr/bin/prometheus ]; then
  echo "test: installing prometheus (Debian package) for promtool and the scrape test" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2 ||
    echo "test: installing prometheus reported an error (a service that could not start?); checking the binaries" >&2
  if [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus.service >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    update-rc.d prometheus disable >/dev/null 2>&1 || true
  fi
  if ! command -v promtool >/dev/null 2>&1 || [ ! -x /usr/bin/prometheus ]; then
    echo "test: promtool or /usr/bin/prometheus is still missing after installing prometheus" >&2
    exit 1
  fi
fi
# Headless Chromium for the console's browser tests
# (internal/httpapi/console/browsertest, a module of its own).
if [ ! -x /usr/bin/chromium ]; then
  echo "test: installing chromium (Debian package) for the console's browser tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
# ip netns and iptables for the partition tests (internal/testenv/netns.go).
scripts/netns-deps.sh
# Screenshots and other test artifacts land here (not committed).
export RUNSTREAM_ARTIFACTS_DIR="${RUNSTREAM_ARTIFACTS_DIR:-$PWD/test-artifacts}"
export RUNSTREAM_TEST_POSTGRES_URL="${RUNSTREAM_TEST_POSTGRES_URL:-$RUNSTREAM_POSTGRES_URL}"
export RUNSTREAM_TEST_REDIS_URL="${RUNSTREAM_TEST_REDIS_URL:-$RUNSTREAM_REDIS_URL}"
export RUNSTREAM_TEST_REQUIRE=1
if [ ! -d ../shared/peer ]; then
  echo "test: ../shared/peer (interop data) is missing beside the checkout" >&2
  exit 1
fi
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "test: gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
# The alert rules: syntax, then their unit tests (deploy/prometheus).
promtool check rules deploy/prometheus/alerts.yml
promtool test rules deploy/prometheus/alerts_test.yml
promtool check config deploy/prometheus/prometheus.yml >/dev/null
go vet ./...
# staticcheck, pinned as a tool of the module (go.mod's tool line): the
# go command fetches it like any dependency, so a fresh machine needs
# nothing else.
go tool staticcheck ./...
go test -race -count=1 -timeout 15m ./...
# The console's browser tests: a nested module, so that chromedp stays out
# of the main module's dependencies (it builds this checkout's binary
# through a replace directive).
(cd internal/httpapi/console/browsertest && go vet ./... && go test -race -count=1 -timeout 10m ./...)
# The API against its OpenAPI document (libopenapi-validator), a nested
# module for the same reason.
(cd internal/httpapi/openapitest && go vet ./... && go test -race -count=1 -timeout 5m ./...)
# The TypeScript producer client (clients/typescript): npm ci installs its
# dev dependencies from the lockfile, the generated API types are checked
# against internal/httpapi/openapi.json, then its tests run with node's
# test runner against this checkout's `runstream api` (needs node 20+ and npm).
scripts/test-typescript.sh
# A stock KafkaJS consumer group (internal/interop/kafkajs, npm ci from its
# lockfile, no codec plugins) reads what `runstream dev` relays with the
# default compression and checks key, headers, value and partition
# against docs/CONSUMERS.md (needs node 18+ and npm).
scripts/test-kafkajs.sh
# The archive read by DuckDB's Node API with no runstream code
# (docs/ARCHIVE.md; internal/interop/duckdb, npm ci from its lockfile;
# installs Node.js from Debian when missing).
scripts/test-duckdb.sh
