// Package console is the web console served by the binary at `/`: a small
// front end of plain ES modules (no build step, no CDN, works offline)
// over the API (runs list and search, snapshot, events, watch, resync;
// for operators lag, dead letters, rebuilds, retention and the audit log
// of operator actions), embedded in
// the binary.
//
// The console is a single page with hash routes (`#/runs/<runId>`,
// `#/lag`, `#/dead-letters`, `#/rebuilds`, `#/retention`,
// `#/operator-actions`; see app.js), so
// [Handler] answers index.html for `/` and for any other path that is
// neither an asset nor an API path; API paths it does not know answer the
// API's JSON NOT_FOUND, so a mistyped /v1 URL never returns HTML.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
)

//go:embed index.html style.css app.js lib.js runs.js run.js ops.js retention.js actions.js
var files embed.FS

// assetNames are the embedded files: the page, its style and its ES
// modules (app.js imports the others by relative URL).
var assetNames = []string{"index.html", "style.css", "app.js", "lib.js", "runs.js", "run.js", "ops.js", "retention.js", "actions.js"}

// asset is one embedded file with what its answer needs.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// apiPrefixes are paths the console never claims: a GET the API's mux did
// not route under them is an unknown endpoint, not a client-side route.
var apiPrefixes = []string{"/v1/", "/metrics", "/healthz", "/readyz"}

// contentSecurityPolicy allows only the console's own files and same-origin
// API calls: the page loads nothing from elsewhere, so an injected string
// that slipped past escaping could neither run nor exfiltrate.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the console: its assets by name, index.html for `/` and
// for unknown non-API paths. Assets are revalidated on every load
// (no-cache with a content ETag): their names carry no hash, so a longer
// cache would keep an old app.js after an upgrade.
func Handler() http.Handler {
	assets := map[string]asset{}
	for _, name := range assetNames {
		b, err := files.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("console: embedded %s missing: %v", name, err)) // build-time invariant
		}
		sum := sha256.Sum256(b)
		assets["/"+name] = asset{body: b, contentType: contentTypes[path.Ext(name)],
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	index := assets["/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "SCHEMA_VALIDATION_FAILED",
				fmt.Sprintf("%s %s: the console only answers GET", r.Method, r.URL.Path))
			return
		}
		for _, p := range apiPrefixes {
			if strings.HasPrefix(r.URL.Path, p) {
				writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
				return
			}
		}
		a, ok := assets[r.URL.Path]
		if !ok {
			a = index
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		if r.Header.Get("If-None-Match") == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", fmt.Sprint(len(a.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(a.body)
		}
	})
}

// writeError writes the API's error shape, so clients of unknown /v1 paths
// see the same body as from the API itself.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
