package config

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParse_Precedence(t *testing.T) {
	env := map[string]string{
		"RUNSTREAM_POSTGRES_URL": "postgres://env",
		"RUNSTREAM_HTTP_ADDR":    "127.0.0.1:9999",
		"RUNSTREAM_LIMIT":        "7",
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	pg := fs.String("postgres-url", "postgres://default", "")
	addr := fs.String("http-addr", "127.0.0.1:8080", "")
	limit := fs.Int("limit", 1, "")
	topic := fs.String("topic", "run-events", "")
	if err := Parse(fs, []string{"--http-addr", "127.0.0.1:1"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *pg != "postgres://env" || *addr != "127.0.0.1:1" || *limit != 7 || *topic != "run-events" {
		t.Fatalf("got pg=%s addr=%s limit=%d topic=%s; want env, flag, env, default", *pg, *addr, *limit, *topic)
	}
}

func TestParse_BadEnvNamesTheVariable(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("max-body-bytes", 1, "")
	err := Parse(fs, nil, func(k string) string {
		if k == "RUNSTREAM_MAX_BODY_BYTES" {
			return "lots"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "RUNSTREAM_MAX_BODY_BYTES") {
		t.Fatalf("err = %v, want it to name RUNSTREAM_MAX_BODY_BYTES", err)
	}
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"", map[string]string{}, ""},
		{"a:t1, b:t2", map[string]string{"a": "t1", "b": "t2"}, ""},
		{"secret", nil, "want token:tenant"},
		{"a:t1,a:t2", nil, "listed twice"},
		{"a:", nil, "entry 1"},
	} {
		got, err := Tokens(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Tokens(%q) err = %v, want %q", tc.in, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Tokens error leaks the token: %v", err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("Tokens(%q) = %v, %v", tc.in, got, err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("Tokens(%q)[%s] = %s, want %s", tc.in, k, got[k], v)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	got := RedactURL("postgres://u:hunter2@h:5432/db")
	if strings.Contains(got, "hunter2") {
		t.Fatalf("RedactURL kept the password: %s", got)
	}
}
