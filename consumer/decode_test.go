package consumer

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runstream/runstream/internal/relay"
	"github.com/runstream/runstream/internal/workload"
	"github.com/runstream/runstream/store"
)

// relayValues returns record values exactly as the relay publishes them,
// for a few realistic runs (payloads with times, artifacts, errors).
func relayValues(t testing.TB, seed uint64) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	var out [][]byte
	for range 3 {
		for i, w := range workload.Run(rng, "tenant_a", workload.Options{}) {
			rec := store.RunEventRecord{RunEventWrite: w, RunSeq: int64(i + 1), PersistedAt: store.FormatPersistedAt(time.Now())}
			kr, err := relay.Record("run-events", &rec)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, kr.Value)
		}
	}
	return out
}

// edgeValues are values the fast decoder must leave to encoding/json, or
// get exactly right.
var edgeValues = []string{
	``, ` `, `{}`, ` { } `, `null`, `[]`, `"x"`, `{not json`, `{"runId":"r","runSeq":1}`, `{"runId":"r","runSeq":1} x`,
	`{"runId":"r","runSeq":1}{}`, `{"runId":"r\u00e9","runSeq":1}`, `{"runId":"r\"q","runSeq":1}`, `{"runId":"é","runSeq":1}`,
	"{\"runId\":\"\xff\",\"runSeq\":1}", "{\"runId\":\"a\tb\",\"runSeq\":1}", `{"RUNID":"r","runSeq":1}`, `{"runId":"r","RunSeq":2}`,
	`{"runId":"a","runId":"b","runSeq":1}`, `{"runId":null,"runSeq":1}`, `{"runId":"r","runSeq":null}`, `{"runId":"r","runSeq":1.0}`,
	`{"runId":"r","runSeq":1e2}`, `{"runId":"r","runSeq":-0}`, `{"runId":"r","runSeq":01}`, `{"runId":"r","runSeq":"1"}`,
	`{"runId":"r","runSeq":9223372036854775807}`, `{"runId":"r","runSeq":9223372036854775808}`, `{"runId":"r","runSeq":-}`,
	`{"runId":1,"runSeq":1}`, `{"runId":"r","runSeq":1,"payload":null}`, `{"runId":"r","runSeq":1,"payload":{}}`,
	`{"runId":"r","runSeq":1,"payload":{"a":[1,-2.5e+3,true,false,null,"\u0041\n",{"b":{}}]}}`,
	`{"runId":"r","runSeq":1,"payload":"str"}`, `{"runId":"r","runSeq":1,"payload":{"a":01}}`, `{"runId":"r","runSeq":1,"payload":{"a":1.}}`,
	`{"runId":"r","runSeq":1,"payload":{"a":"\x"}}`, `{"runId":"r","runSeq":1,"payload":{"a":"\u12"}}`, `{"runId":"r","runSeq":1,"payload":[1,]}`,
	"{\"runId\":\"r\",\"runSeq\":1,\"payload\":{\"a\":\"\xff\xfe\"}}", `{"runId":"r","runSeq":1,"payload":{"a":tru}}`,
	`{"runId":"r","runSeq":1,"future":{"x":[1,2,{"y":"z"}]},"stepId":"s"}`, `{"ſtepId":"s","runId":"r","runSeq":1}`,
	"{\"\u212aey\":1,\"runId\":\"r\",\"runSeq\":1}", `{"run\u0049d":"r","runSeq":1}`, `{"runId":"r","runSeq":1,}`, `{"runId":"r" "runSeq":1}`,
	`{"runId":"r","runSeq":1,"payload":` + deep(300) + `}`, `{"runId":"r","runSeq":1,"payload":` + deep(20) + `}`,
	"\t\r\n{\"runId\" : \"r\" ,\n\"runSeq\" :\t1 }\n",
}

func deep(n int) string {
	s := ""
	for range n {
		s += "["
	}
	for range n {
		s += "]"
	}
	return s
}

// checkDecode fails when decodeRecord and json.Unmarshal disagree, or when
// the fast path claims a value it decodes differently.
func checkDecode(t *testing.T, value []byte) {
	t.Helper()
	var want, got, fast store.RunEventRecord
	wantErr := json.Unmarshal(value, &want)
	gotErr := decodeRecord(value, &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: decodeRecord error %v, encoding/json %v", value, gotErr, wantErr)
	}
	if wantErr != nil {
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: decodeRecord error %q, encoding/json %q", value, gotErr, wantErr)
		}
		if fastDecode(value, &fast) {
			t.Fatalf("%q: the fast path accepted what encoding/json refuses (%v)", value, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\ndecodeRecord %+v\nencoding/json %+v", value, got, want)
	}
	if fastDecode(value, &fast) && !reflect.DeepEqual(fast, want) {
		t.Fatalf("%q:\nfast path %+v\nencoding/json %+v", value, fast, want)
	}
}

func TestDecodeRecord_AgreesWithEncodingJSON(t *testing.T) {
	for _, v := range edgeValues {
		checkDecode(t, []byte(v))
	}
	for _, v := range relayValues(t, 1) {
		checkDecode(t, v)
	}
}

// TestDecodeRecord_RelayRecordsTakeTheFastPath: what the relay publishes
// never falls back to encoding/json (the point of the fast path).
func TestDecodeRecord_RelayRecordsTakeTheFastPath(t *testing.T) {
	vals := relayValues(t, 2)
	for _, v := range vals {
		var rec store.RunEventRecord
		if !fastDecode(v, &rec) {
			t.Fatalf("the fast path gave up on a relay record: %s", v)
		}
	}
	if len(vals) == 0 {
		t.Fatal("no records")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, v := range edgeValues {
		f.Add([]byte(v))
	}
	for _, v := range relayValues(f, 3) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		checkDecode(t, value)
	})
}

func TestHeaderIDs(t *testing.T) {
	rec := store.RunEventRecord{RunEventWrite: store.RunEventWrite{RunID: "run_1", EventType: "RunStarted"}, RunSeq: 42}
	kr, err := relay.Record("run-events", &rec)
	if err != nil {
		t.Fatal(err)
	}
	if id, seq, ok := headerIDs(kr); !ok || id != "run_1" || seq != 42 {
		t.Fatalf("headerIDs(relay record) = %q, %d, %v", id, seq, ok)
	}
	for _, r := range []*kgo.Record{
		{Key: []byte("run_1")},
		{Headers: []kgo.RecordHeader{{Key: "runSeq", Value: []byte("3")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runSeq", Value: []byte("x")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runSeq", Value: []byte("0")}}},
		{Key: []byte("run_1"), Headers: []kgo.RecordHeader{{Key: "runseq", Value: []byte("3")}}},
	} {
		if id, seq, ok := headerIDs(r); ok {
			t.Errorf("headerIDs(%v) = %q, %d, true; want not ok", r, id, seq)
		}
	}
}

func BenchmarkDecodeRecord(b *testing.B) {
	vals := relayValues(b, 4)
	b.Run("fast", func(b *testing.B) {
		var rec store.RunEventRecord
		for i := 0; b.Loop(); i++ {
			_ = decodeRecord(vals[i%len(vals)], &rec)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var rec store.RunEventRecord
			_ = json.Unmarshal(vals[i%len(vals)], &rec)
		}
	})
}
