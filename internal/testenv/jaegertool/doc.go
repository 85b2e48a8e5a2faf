// Package jaegertool pins Jaeger (github.com/jaegertracing/jaeger/cmd/jaeger,
// the OpenTelemetry-collector-based Jaeger v2) as a Go tool for the tests
// that check runstream's traces in a real Jaeger (testenv.StartJaeger).
//
// It is a module of its own so that Jaeger's large dependency tree (the
// OpenTelemetry collector, every storage backend's client) stays out of
// runstream's main module: the main module's go build, go vet, go mod tidy
// and the linter never see it. scripts/jaeger-deps.sh builds the binary
// from this module, at the version its go.mod pins, into a cache outside
// the checkout, and prints RUNSTREAM_JAEGER_BINARY for the tests.
package jaegertool
