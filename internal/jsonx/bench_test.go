package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The benchmarks of this file put each primitive of the package beside
// what could replace it, in three arms: ours, encoding/json, and
// go-json-experiment's jsontext (the encoding/json/jsontext of Go's json v2
// proposal). docs/PERFORMANCE.md ("One JSON layer") has the table and the
// verdicts. Run: go test -run '^$' -bench . -benchmem ./internal/jsonx

// benchPayload is a typical StepCompleted payload as Postgres's jsonb text
// returns it.
var benchPayload = []byte(`{"stepId": "model.orders", "result": {"rows": 18234, "bytes": 9123456, "tables": ["orders", "order_items"], "warnings": []}, "outputs": [{"uri": "s3://bucket/runs/0d3c6a9e/model.orders/part-0001.parquet", "kind": "parquet", "sizeBytes": 5242880}], "durationMs": 8123, "attempt": 1, "note": "ok"}`)

// benchStrings are the strings of a typical record: ids, a timestamp, a type.
var benchStrings = []string{"0d3c6a9e-4f0c-4a8e-9d5d-3d4c0f7dbb8a", "2026-11-25T02:11:04.123456Z", "StepCompleted", "model.orders", "tenant_a"}

func BenchmarkAppendString(b *testing.B) {
	b.Run("jsonx", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, s := range benchStrings {
				buf = AppendString(buf, s)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, s := range benchStrings {
				enc, _ := json.Marshal(s)
				buf = append(buf, enc...)
			}
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, s := range benchStrings {
				buf, _ = jsontext.AppendQuote(buf, s)
			}
		}
	})
}

func BenchmarkAppendRaw(b *testing.B) {
	b.Run("jsonx", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = AppendRaw(buf[:0], benchPayload)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		// What json.Marshal does with a json.RawMessage: compact, then
		// escape for HTML.
		var c, h bytes.Buffer
		for b.Loop() {
			c.Reset()
			h.Reset()
			_ = json.Compact(&c, benchPayload)
			json.HTMLEscape(&h, c.Bytes())
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			v := jsontext.Value(append(buf[:0], benchPayload...))
			_ = v.Compact(jsontext.EscapeForHTML(true))
			buf = v
		}
	})
}

func BenchmarkSkip(b *testing.B) {
	b.Run("jsonx", func(b *testing.B) {
		for b.Loop() {
			s := Scanner{B: benchPayload}
			if !s.Skip(0, MaxDepth) || !s.End() {
				b.Fatal("not skipped")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if !json.Valid(benchPayload) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		for b.Loop() {
			if !jsontext.Value(benchPayload).IsValid() {
				b.Fatal("invalid")
			}
		}
	})
}

// BenchmarkObjectMembers cuts an object into its members' keys and raw
// values, as the reducer's payload reader and the ETL do.
func BenchmarkObjectMembers(b *testing.B) {
	b.Run("jsonx", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for o := NewObject(benchPayload, MaxDepth); o.Next(); {
				n++
			}
			if n != 6 {
				b.Fatal(n)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(benchPayload, &m); err != nil || len(m) != 6 {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		r := bytes.NewReader(nil)
		d := jsontext.NewDecoder(r)
		for b.Loop() {
			r.Reset(benchPayload)
			d.Reset(r)
			n := 0
			if _, err := d.ReadToken(); err != nil {
				b.Fatal(err)
			}
			for d.PeekKind() != '}' {
				if _, err := d.ReadToken(); err != nil {
					b.Fatal(err)
				}
				if _, err := d.ReadValue(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 6 {
				b.Fatal(n)
			}
		}
	})
}

// BenchmarkUnquote reads a string with an escape (the slow case of the
// snapshot decoder's strings).
func BenchmarkUnquote(b *testing.B) {
	in := []byte(`"step \"model.orders\" failed: timeout after 30s\n"`)
	b.Run("jsonx", func(b *testing.B) {
		for b.Loop() {
			s := Scanner{B: in}
			if _, ok := s.Unquote(); !ok {
				b.Fatal("gave up")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var s string
			if err := json.Unmarshal(in, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = jsontext.AppendUnquote(buf[:0], in); err != nil {
				b.Fatal(err)
			}
			_ = string(buf)
		}
	})
}
