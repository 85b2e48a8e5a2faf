// Package openapitest holds runstream's HTTP API to its OpenAPI 3.1
// document (internal/httpapi/openapi.json): it checks the document against
// the OpenAPI 3.1 specification, then drives a real API on real Postgres
// and Redis through every documented operation and validates each request
// and answer against the document with pb33f's libopenapi-validator. It is
// a module of its own so that the validator's dependencies stay out of
// runstream's main module; `make test` runs it (scripts/test.sh) with a
// replace directive pointing at this checkout.
package openapitest
