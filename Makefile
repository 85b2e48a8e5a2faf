# runstream: the two commands a new user needs are `make dev` and `make test`.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/runstream

.PHONY: all build dev test test-unit up fuzz bench soak fmt vet tidy clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/runstream

# Installs (apt) and starts Postgres 15 and Redis 7 on loopback when absent
# or stopped; a no-op when they run.
up:
	@scripts/up.sh >/dev/null

# Brings everything up and shows it working: the API with a demo workload.
dev: build
	@eval "$$(scripts/up.sh)" && exec ./$(BIN) dev --demo

# The whole test suite against real Postgres and Redis (and kfake): missing
# servers fail the run (RUNSTREAM_TEST_REQUIRE=1), -race always.
test:
	@scripts/test.sh

# Unit tests only: no servers needed (integration tests skip).
test-unit:
	$(GO) test -race ./...

# Time-boxed fuzzing of the decoders and the reducer (FUZZTIME=30s each).
fuzz:
	@scripts/fuzz.sh

# Benchmarks with their baselines measured in the same run (see bench/README.md).
bench: build
	@scripts/bench.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin
