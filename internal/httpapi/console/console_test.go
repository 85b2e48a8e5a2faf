package console

import (
	"net/http"
	"net/http/httptest"
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
