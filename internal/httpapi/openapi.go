package httpapi

import (
	_ "embed"
	"net/http"
	"strconv"
)

// OpenAPI is the OpenAPI 3.1 document of this API (openapi.json beside
// this file), served at GET /openapi.json. It is the contract the
// clients' types are generated from; the contract tests validate real
// answers against it, and TestOpenAPI_RunEventWriteIsTheEnvelope holds its
// RunEventWrite to store/validate's envelope schema, so it cannot drift.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPI: GET /openapi.json.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(OpenAPI)))
	h.Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(OpenAPI)
	}
	return nil
}

// Routes returns the ServeMux patterns the API serves ("GET
// /v1/runs/{runId}/events"), in registration order: the contract tests
// hold the OpenAPI document to them.
func (s *Server) Routes() []string { return append([]string(nil), s.patterns...) }
