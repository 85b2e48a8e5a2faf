package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runstream/runstream/internal/httpapi"
	"github.com/runstream/runstream/store/postgres"
)

// The OpenAPI document's RunEventWrite is store/validate's envelope schema
// itself (its $defs addressed from the document's root): a change to one
// without the other fails here.
func TestOpenAPI_RunEventWriteIsTheEnvelope(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	raw := strings.ReplaceAll(string(doc.Components.Schemas["RunEventWrite"]), "#/components/schemas/RunEventWrite/$defs/", "#/$defs/")
	var got map[string]any
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../store/validate/schemas/envelope.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"$schema", "$id", "title"} {
		delete(want, k)
		delete(got, k)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("openapi.json's RunEventWrite differs from store/validate/schemas/envelope.schema.json (-envelope +openapi):\n%s", d)
	}
}

// Every route the API serves is in the document with its method, and
// every operation of the document is served: neither drifts alone.
func TestOpenAPI_DescribesEveryRoute(t *testing.T) {
	srv, err := httpapi.New(httpapi.Config{Registerer: prometheus.NewRegistry()}, (*postgres.Store)(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	// The mux's patterns that are not API operations: the console and
	// the fallbacks that answer 404/405.
	undocumented := []string{"GET /", "GET /v1/", "/"}
	served := map[string]bool{"GET /metrics": true}
	for _, p := range srv.Routes() {
		if slices.Contains(undocumented, p) {
			continue
		}
		served[p] = true
		if strings.HasPrefix(p, "GET ") && strings.HasSuffix(p, "/watch") {
			served["HEAD "+strings.TrimPrefix(p, "GET ")] = true // GET patterns take HEAD
		}
	}
	for op := range served {
		if !documented[op] {
			t.Errorf("%s is served but not in internal/httpapi/openapi.json", op)
		}
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("openapi.json documents %s, which the API does not serve", op)
		}
	}
}

// GET /openapi.json serves the document, without credentials.
func TestOpenAPI_Served(t *testing.T) {
	srv, err := httpapi.New(httpapi.Config{Registerer: prometheus.NewRegistry(), AuthTokens: map[string]string{"tok": "tenant-a"}}, (*postgres.Store)(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if !slices.Equal(rec.Body.Bytes(), httpapi.OpenAPI) {
		t.Fatal("GET /openapi.json is not the embedded document")
	}
	var v struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.OpenAPI != "3.1.0" {
		t.Fatalf("not an OpenAPI 3.1 document: %q, %v", v.OpenAPI, err)
	}
}
