package console

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestHandler_Routes(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
		bodyHas      string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="/app.js">`},
		{"GET", "/app.js", 200, "text/javascript; charset=utf-8", "function route"},
		{"GET", "/run.js", 200, "text/javascript; charset=utf-8", "export function runPage"},
		{"GET", "/ops.js", 200, "text/javascript; charset=utf-8", "export function lagPage"},
		{"GET", "/style.css", 200, "text/css; charset=utf-8", ":root"},
		// Client-side routes and unknown pages get the app.
		{"GET", "/runs/abc", 200, "text/html; charset=utf-8", "<title>runstream console</title>"},
		{"GET", "/favicon.ico", 200, "text/html; charset=utf-8", "<title>"},
		// API paths never turn into HTML.
		{"GET", "/v1/nope", 404, "application/json", `"code":"NOT_FOUND"`},
		{"GET", "/metricsx", 404, "application/json", `"code":"NOT_FOUND"`},
		{"POST", "/", 405, "application/json", "only answers GET"},
		{"HEAD", "/app.js", 200, "text/javascript; charset=utf-8", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, rec.Code, tc.status)
		}
		if got := rec.Header().Get("Content-Type"); got != tc.contentType {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, got, tc.contentType)
		}
		if !strings.Contains(rec.Body.String(), tc.bodyHas) {
			t.Errorf("%s %s: body does not contain %q:\n%.300s", tc.method, tc.path, tc.bodyHas, rec.Body.String())
		}
		if tc.method == "HEAD" && rec.Body.Len() != 0 {
			t.Errorf("HEAD %s wrote a body of %d bytes", tc.path, rec.Body.Len())
		}
	}
}

func TestHandler_CachingAndSecurityHeaders(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/app.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("app.js: ETag %q, Cache-Control %q; want a content ETag and no-cache (names carry no hash)",
			etag, rec.Header().Get("Cache-Control"))
	}
	for _, k := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy"} {
		if rec.Header().Get(k) == "" {
			t.Errorf("app.js: no %s header", k)
		}
	}
	req := httptest.NewRequest("GET", "/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Fatalf("revalidation with the current ETag: %d with %d bytes, want 304 and no body", rec.Code, rec.Body.Len())
	}
}

// TestAssets_NoExternalReferences keeps the console working offline and
// inside its CSP: no CDN, no remote fonts, no inline scripts or handlers.
func TestAssets_NoExternalReferences(t *testing.T) {
	for _, name := range assetNames {
		b, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "url(http", "innerHTML", " onclick=\"", "<script>"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

// TestAssets_ModulesEmbedded holds the embed list to the directory: every
// .js, .css and .html file is served, and every module an asset imports
// ('./x.js') is one of them, so a new module cannot be left out of the
// binary (the page would fail to load it with a 200 of index.html).
func TestAssets_ModulesEmbedded(t *testing.T) {
	served := map[string]bool{}
	for _, n := range assetNames {
		served[n] = true
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".js", ".css", ".html":
			if !served[e.Name()] {
				t.Errorf("%s is in the console's directory but not in assetNames (and the go:embed line)", e.Name())
			}
		}
	}
	importRE := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';$`)
	h := Handler()
	imports := 0
	for _, n := range assetNames {
		b, err := files.ReadFile(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			imports++
			if !served[m[1]] {
				t.Errorf("%s imports ./%s, which is not embedded", n, m[1])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+m[1], nil))
			if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "text/javascript; charset=utf-8" {
				t.Errorf("GET /%s (imported by %s): %d %q, want 200 text/javascript", m[1], n, rec.Code, ct)
			}
		}
	}
	if imports < len(assetNames)-3 { // app.js imports every other module
		t.Fatalf("found %d imports in the console's modules: the import pattern no longer matches how they import", imports)
	}
}
