package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/runstream/runstream/store"
	"github.com/runstream/runstream/store/validate"
)

// query parses the request's query string strictly. r.URL.Query() drops
// a pair it cannot decode without a word (?cursor=%%% would list from the
// start, as if no cursor were given), so every handler that reads the
// query reads it through here: a malformed query is 400 naming the
// parameter.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		return q, nil
	}
	return nil, badRequest(malformedParam(r.URL.RawQuery),
		"the query string is malformed ("+err.Error()+"); percent-encode each parameter's value (%25 for a literal %) and separate parameters with &")
}

// malformedParam names the first parameter of raw that url.ParseQuery
// refuses, as its Field: its name, or "query" when the name itself is
// what cannot be read.
func malformedParam(raw string) string {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		name, kerr := url.QueryUnescape(key)
		_, verr := url.QueryUnescape(value)
		if kerr == nil && verr == nil && !strings.Contains(pair, ";") {
			continue
		}
		if kerr != nil || strings.Contains(key, ";") || !store.ValidIdentifier(name) || len(name) > 64 {
			return "query"
		}
		return name
	}
	return "query"
}

// queryIdentifier reads parameter name of q, when present, as an
// identifier ([store.ValidIdentifier], a tenantId): 400 naming it otherwise.
func queryIdentifier(q url.Values, name string) (string, error) {
	v := q.Get(name)
	if v == "" {
		return "", nil
	}
	if err := validate.Identifier(name, v); err != nil {
		return "", err
	}
	return v, nil
}

// countTrue counts the true ones among bs: how many of a request's
// mutually exclusive selectors were given.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
