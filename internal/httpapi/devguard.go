package httpapi

import (
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/runstream/runstream/store"
)

// guardDevelopment protects an API without tokens from the browser the
// developer uses for everything else. Any web page can POST a "simple"
// request (text/plain, no preflight) to 127.0.0.1:8080, and DNS
// rebinding lets a page read every GET under its own host name. So, as
// Jupyter and Docker do, without tokens: a POST must say
// Content-Type: application/json (415 otherwise), and the Host header must
// be localhost, a loopback address or one of AllowedHosts (403 otherwise).
// Health, readiness and metrics stay open to probes that use the pod's
// address.
func (s *Server) guardDevelopment(next http.Handler) http.Handler {
	if len(s.tokens) > 0 {
		return next
	}
	allowed := map[string]bool{}
	anyHost := false
	for _, h := range s.cfg.AllowedHosts {
		if h == "*" {
			anyHost = true
		}
		allowed[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		if !anyHost && !loopbackHost(r.Host) && !allowed[strings.ToLower(hostOnly(r.Host))] {
			s.writeError(w, r, &store.Error{Code: store.CodeForbidden, Field: "Host",
				Message: "authentication is off, so only localhost may be used as the Host (DNS rebinding guard); add the name to --allowed-hosts or configure RUNSTREAM_AUTH_TOKENS"})
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				s.writeError(w, r, &httpError{status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE", field: "Content-Type",
					msg: "authentication is off, so POST bodies must be sent as Content-Type: application/json (a browser cannot send that cross-site without asking)"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// loopbackHost reports whether a Host header names this machine (a
// *.localhost name too: browsers resolve those to loopback).
func loopbackHost(hostport string) bool {
	h := strings.ToLower(hostOnly(hostport))
	return strings.HasSuffix(h, ".localhost") || IsLoopbackName(h)
}

// IsLoopbackName reports whether host (no port) is "localhost" or a
// loopback IP address: reachable from this machine only. The empty host,
// 0.0.0.0 and :: are not.
func IsLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
