package snapshots

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/reduce"
	"github.com/runstream/runstream/store"
)

// strs are strings encoding/json escapes in every way it has (quotes,
// backslashes, control characters, HTML characters, invalid UTF-8, U+2028)
// and plain ones.
var strs = []string{"", "plain", "run_7f3a", "2026-01-01T00:00:00.000000Z", `quo"te`, `back\slash`,
	"tab\tnew\nline\r", "\x00\x01\x1f\x7f", "<b>&amp;</b>", "caf\u00e9 \u2603 \U0001F600", "\xff\xfe bad utf-8",
	"line\u2028sep\u2029", "\b\f", "s3://bucket/a/b/run_results.json"}

// fill sets every field reachable from v (strings, integers, booleans,
// pointers, slices of one to three elements) from rng, zero or empty with
// some probability, so omitempty and nil are covered too.
func fill(rng *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(strs[rng.IntN(len(strs))])
	case reflect.Int, reflect.Int64:
		if rng.IntN(4) > 0 {
			v.SetInt(rng.Int64N(1<<40) - 1<<20)
		}
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Pointer:
		if rng.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(rng, v.Elem())
		}
	case reflect.Slice:
		switch rng.IntN(5) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + rng.IntN(3)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fill(rng, v.Index(i))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(rng, v.Field(i))
		}
	default:
		panic("fill: unhandled kind " + v.Kind().String() + " (a new field type in the snapshot? teach Append and fill)")
	}
}

func checkEncoding(t *testing.T, s *store.RunSnapshot) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := Append(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("Append differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
	n := NotificationOf(s)
	want, _ = json.Marshal(n)
	if got := n.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Notification.Append differs from json.Marshal:\n got %s\nwant %s", got, want)
	}
}

func TestAppendSnapshot_EqualsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	checkEncoding(t, &store.RunSnapshot{})
	for range 3000 {
		var s store.RunSnapshot
		fill(rng, reflect.ValueOf(&s).Elem())
		checkEncoding(t, &s)
	}
	// Every field set: none may be missing from Append.
	var full store.RunSnapshot
	setAll(reflect.ValueOf(&full).Elem())
	checkEncoding(t, &full)
	// Real snapshots, as the reducer makes them.
	for range 50 {
		s := reducedRun(rng, "tenant_a")
		checkEncoding(t, &s)
	}
}

// reducedRun is the snapshot of a generated run of tenant, as the reducer
// makes it.
func reducedRun(rng *rand.Rand, tenant string) store.RunSnapshot {
	var recs []store.RunEventRecord
	for i, w := range workload.Run(rng, tenant, workload.Options{}) {
		recs = append(recs, store.RunEventRecord{RunEventWrite: w, RunSeq: int64(i + 1), PersistedAt: w.EmittedAt})
	}
	s, _ := reduce.Project(store.RunSnapshot{}, recs)
	return s
}

// setAll sets every field reachable from v to a non-zero value.
func setAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x<y")
	case reflect.Int, reflect.Int64:
		v.SetInt(42)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		setAll(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		setAll(v.Index(0))
		setAll(v.Index(1))
	case reflect.Struct:
		for i := range v.NumField() {
			setAll(v.Field(i))
		}
	default:
		panic("setAll: unhandled kind " + v.Kind().String())
	}
}

func BenchmarkEncodeSnapshot(b *testing.B) {
	s := reducedRun(rand.New(rand.NewPCG(1, 2)), "tenant_a")
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(&s)
		}
	})
	b.Run("Append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = Append(buf[:0], &s)
		}
	})
}

func checkSnapshotDecode(t *testing.T, b []byte) {
	t.Helper()
	var want, got store.RunSnapshot
	errWant := json.Unmarshal(b, &want)
	if !decodeFast(b, &got) {
		return
	}
	if errWant != nil {
		t.Fatalf("%q: decodeFast read it, encoding/json says %v", b, errWant)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nencoding/json %+v\ndecodeFast    %+v", b, want, got)
	}
}

// TestFastSnapshot_EqualsEncodingJSON: random snapshots (every field, odd
// strings, nil and empty lists), real ones, and hand-made oddities decode
// as encoding/json decodes them, and the ones Append writes take
// the fast path unless a string needs a surrogate escape or is not UTF-8.
func TestFastSnapshot_EqualsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	fast := 0
	for range 3000 {
		var s store.RunSnapshot
		fill(rng, reflect.ValueOf(&s).Elem())
		b := Append(nil, &s)
		checkSnapshotDecode(t, b)
		var got store.RunSnapshot
		if decodeFast(b, &got) {
			fast++
		}
	}
	if fast < 100 {
		t.Fatalf("the fast path read only %d of 3000 random snapshots", fast)
	}
	var full store.RunSnapshot
	setAll(reflect.ValueOf(&full).Elem())
	b := Append(nil, &full)
	var got store.RunSnapshot
	if !decodeFast(b, &got) || !reflect.DeepEqual(got, full) {
		t.Fatalf("every field set: fast path %v, got %+v", decodeFast(b, &got), got)
	}
	for range 50 {
		s := reducedRun(rng, "tenant_a")
		b := Append(nil, &s)
		var got store.RunSnapshot
		if !decodeFast(b, &got) || !reflect.DeepEqual(got, s) {
			t.Fatalf("a reduced snapshot did not round-trip through the fast path: %s", b)
		}
	}
	for _, v := range snapshotVariants {
		checkSnapshotDecode(t, []byte(v))
	}
}

var snapshotVariants = []string{
	`{"runId":"r","steps":[{"stepId":"a","status":"RUNNING","artifacts":[],"attempts":[]}],"artifacts":[],"stale":false}`,
	`{"runId":"r","steps":[{"stepId":"a"}],"steps":[{"status":"X"}]}`,
	`{"runId":"r","error":{"code":"a"},"error":{"message":"b"}}`,
	`{"runId":"r","steps":null}`,
	`{"runId":"r","RUNID":"x"}`,
	`{"runId":"r","unknown":1}`,
	`{"runId":"a\u00e9\n\"\\\/\b\f\r\t\u0000x","status":"\ud83d\ude00"}`,
	`{"runId":"\ud800"}`,
	"{\"runId\":\"\xff\"}",
	`{"lastEventSeq":1.5}`,
	`{"lastEventSeq":-3,"failedSteps":99999999999999999999}`,
	`{"stale":true,"stale":false}`,
	`{"stale":1}`,
	` {"runId" : "r" , "totalDurationMs" : 5 } `,
	`{"runId":"r"} x`,
	`{"runId":"r",}`,
	`{"steps":[{"stepId":"a","attempts":[{"logicalAttemptId":1,"skip":{"reason":"x","reasonCode":"y"},"durationMs":3}]}]}`,
	`{"steps":[{"stepId":"a","skip":{"reason":"x"},"skip":{"reasonCode":"y"}}]}`,
	`{"artifacts":[{"uri":"u","sizeBytes":1,"sizeBytes":2}]}`,
	`[]`, `null`, ``, `{}`,
}

func FuzzDecodeSnapshot(f *testing.F) {
	for _, v := range snapshotVariants {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkSnapshotDecode(t, b) })
}

func BenchmarkDecodeSnapshot(b *testing.B) {
	s := reducedRun(rand.New(rand.NewPCG(1, 2)), "tenant_a")
	raw := Append(nil, &s)
	b.Run("Decode", func(b *testing.B) {
		var got store.RunSnapshot
		for b.Loop() {
			if err := Decode(raw, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var got store.RunSnapshot
			if err := json.Unmarshal(raw, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}
