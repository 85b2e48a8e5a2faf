#!/usr/bin/env bash
# make test: start the real servers, check formatting and vet, then run every
# test with -race against them. Missing servers fail (RUNSTREAM_TEST_REQUIRE=1).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/up.sh)"
# Independent Kafka clients for the interop tests (librdkafka's kcat).
if ! command -v kcat >/dev/null 2>&1; then
  echo "test: installing kcat (Debian package) for the Kafka interop tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >&2
fi
# Headless Chromium for the console's browser tests (cmd/runstream/console_test.go).
if [ ! -x /usr/bin/chromium ]; then
  echo "test: installing chromium (Debian package) for the console's browser tests" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
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
go vet ./...
go test -race -count=1 -timeout 15m ./...
