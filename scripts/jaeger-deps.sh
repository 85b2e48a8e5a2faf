#!/usr/bin/env bash
# Jaeger for the tests that read runstream's traces back from a real Jaeger
# (internal/testenv/jaeger.go): builds github.com/jaegertracing/jaeger/cmd/jaeger
# from the nested module internal/testenv/jaegertool (its go.mod pins the
# version and keeps Jaeger's dependencies out of the main module) into a
# cache outside the checkout,
#   ${RUNSTREAM_TOOLS_DIR:-$HOME/.cache/runstream/tools}/jaeger-<version>,
# the version read from that go.mod so that the name cannot drift from what
# is built. A no-op when the binary is already there. Prints the
# environment to use it (eval "$(scripts/jaeger-deps.sh)"):
#   export RUNSTREAM_JAEGER_BINARY='...'
# make test (scripts/test.sh) and make chaos run it. From an empty Go build
# cache the build takes a few minutes (Jaeger is an OpenTelemetry collector
# with every storage backend's client); with a warm one, seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
name=jaeger-deps
mod=internal/testenv/jaegertool
version=$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2; exit }' "$mod/go.mod")
if [ -z "$version" ]; then
  echo "$name: no github.com/jaegertracing/jaeger requirement in $mod/go.mod" >&2
  exit 1
fi
dir=${RUNSTREAM_TOOLS_DIR:-$HOME/.cache/runstream/tools}
dest="$dir/jaeger-$version"
if [ ! -x "$dest" ]; then
  mkdir -p "$dir"
  tmp="$dest.tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  t0=$(date +%s)
  # A plain build whatever the caller's GOFLAGS (make test's -race would
  # instrument all of Jaeger), without VCS stamping (the checkout's state
  # is not Jaeger's), and outside any go.work.
  (cd "$mod" && GOWORK=off GOFLAGS=-buildvcs=false go build -o "$tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
  mv -f "$tmp" "$dest"
  echo "$name: built jaeger $version into $dest in $(( $(date +%s) - t0 ))s" >&2
fi
echo "export RUNSTREAM_JAEGER_BINARY='$dest'"
