package record

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/runstream/runstream/store"
)

// relayValues returns record values as the relay publishes them
// (json.Marshal of a RunEventRecord, which AppendValue matches byte
// for byte), for a few realistic runs: payloads with times, artifacts,
// nested metadata and errors.
func relayValues(t testing.TB, seed uint64) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	var out [][]byte
	for r := range 3 {
		runID := fmt.Sprintf("run-%d-%d", seed, r)
		seq := int64(0)
		add := func(typ, step string, payload string) {
			seq++
			rec := store.RunEventRecord{RunEventWrite: store.RunEventWrite{EventID: fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), rng.Uint64()&0xffffffffffff),
				EventType: typ, EmittedAt: "2026-11-22T10:00:00.123456789Z", RunID: runID, TenantID: "tenant_a", ProjectID: "proj",
				EnvironmentID: "prod", PlanID: "plan", PlanVersion: "v3", EngineAttemptID: 1, LogicalAttemptID: int64(1 + rng.IntN(2)),
				IdempotencyKey: fmt.Sprintf("%064x", rng.Uint64()), StepID: step, Payload: json.RawMessage(payload)},
				RunSeq: seq, PersistedAt: store.FormatPersistedAt(time.Now())}
			b, err := json.Marshal(&rec)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		add(store.EventRunStarted, "", `{"trigger":"schedule","params":{"full_refresh":false,"vars":{"a":[1,2,{"b":null}]}}}`)
		for s := range 2 + rng.IntN(4) {
			step := fmt.Sprintf("model.proj.step_%d", s)
			add(store.EventStepStarted, step, `{"startedAt":"2026-11-22T10:00:01Z"}`)
			if rng.IntN(4) == 0 {
				add(store.EventStepFailed, step, `{"errorCode":"DBT_COMPILE","errorMessage":"syntax error at or near \"selec\"","failureCategory":"USER"}`)
				continue
			}
			add(store.EventStepCompleted, step, `{"durationMs":1234,"artifacts":[{"kind":"dbt.run_results","uri":"s3://bucket/run_results.json","sizeBytes":2048}],"rowsAffected":12}`)
		}
		add(store.EventRunCompleted, "", `{}`)
		add("RunArchivedInTheFuture", "", `{"x":1.5e3}`)
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
	// from the projector's former record decoder
	`{"eventId":"e1","eventType":"StepStarted","runId":"r1","runSeq":3,"stepId":"a","payload":{"x":[1,2,{"y":null}]},"persistedAt":"2026-01-01T00:00:00.000000Z"}`,
	`{"EVENTID":"e1","RunId":"r1","runseq":3,"PAYLOAD":{"a":1}}`,
	`{"run_id":"r1","runId":"r2","runSeq":1}`,
	`{"runId":"r1","runId":"r2","runSeq":1,"runSeq":2}`,
	`{"runId":"r1","runSeq":1,"payload":null}`,
	`{"runId":"r1","runSeq":1,"payload":  { "spaced" : true }  }`,
	`{"runId":"r1","runSeq":1,"payload":"a string"}`,
	`{"runId":"r\u00e9\n\"1\"","runSeq":1,"tenantId":"\ud83d\ude00"}`,
	"{\"runId\":\"bad \xff utf-8\",\"runSeq\":1}",
	`{"runId":"r1","runSeq":1.0}`,
	`{"runId":"r1","runSeq":1e3}`,
	`{"runId":"r1","runSeq":99999999999999999999}`,
	`{"runId":"r1","runSeq":"1"}`,
	`{"runId":"r1","runSeq":null,"stepId":null}`,
	`{"runId":1,"runSeq":1}`,
	`{"runId":"r1","runSeq":1,"unknown":{"deep":[[[]]]},"future":"x"}`,
	`{"runId":"r1","runSeq":1,"engineAttemptId":-2,"logicalAttemptId":0}`,
	`{"runId":"r1","runSeq":1`,
	`[]`,
	`null`,
	``,
	`{"runId":"r1","runSeq":1} trailing`,
	`{"runId":"r1","runSeq":-0,"engineAttemptId":007}`,
	`{"runId":"r1","runSeq":123456789012345678901}`,
	`{"runId":"r1","runSeq":1,"payload":{"s":"\u00e9\ud800\"\\","n":[-0.5e+3,0,1E2]}}`,
	`{"runId":"r1","runSeq":1,"payload":{"bad":"\x"}}`,
	`{"runId":"r1","runSeq":1,"payload":{"n":01}}`,
	`{"runId":"r1","runSeq":1,"payload":{"a":[1,]}}`,
	`{"runId":"r1","runSeq":1,"payload":[1,2],"payload":{"b":true}}`,
	`{"runid":"r1","RUNSEQ":1}`,
	`{"runſeq":4,"runId":"r1"}`,
	`{"runId":"r1","runSeq":1,"x-y":2,"run_seq":3}`,
	"{\"runId\":\"tab\tinside\",\"runSeq\":1}",
	` { "runId" : "r1" , "runSeq" : 1 } `,
	`{}`,
	`{"runId":"r1",}`,
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

// checkDecode fails when DecodeValue and json.Unmarshal disagree, or when
// the fast path claims a value it decodes differently.
func checkDecode(t *testing.T, value []byte) {
	t.Helper()
	var want, got, fast store.RunEventRecord
	wantErr := json.Unmarshal(value, &want)
	gotErr := DecodeValue(value, &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: DecodeValue error %v, encoding/json %v", value, gotErr, wantErr)
	}
	if wantErr != nil {
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: DecodeValue error %q, encoding/json %q", value, gotErr, wantErr)
		}
		if fastDecode(value, &fast) {
			t.Fatalf("%q: the fast path accepted what encoding/json refuses (%v)", value, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nDecodeValue %+v\nencoding/json %+v", value, got, want)
	}
	if fastDecode(value, &fast) && !reflect.DeepEqual(fast, want) {
		t.Fatalf("%q:\nfast path %+v\nencoding/json %+v", value, fast, want)
	}
}

func TestDecodeValue_AgreesWithEncodingJSON(t *testing.T) {
	for _, v := range edgeValues {
		checkDecode(t, []byte(v))
	}
	for _, v := range relayValues(t, 1) {
		checkDecode(t, v)
	}
}

// TestDecodeValue_RelayRecordsTakeTheFastPath: what the relay publishes
// never falls back to encoding/json (the point of the fast path).
func TestDecodeValue_RelayRecordsTakeTheFastPath(t *testing.T) {
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

func FuzzDecodeValue(f *testing.F) {
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

func BenchmarkDecodeValue(b *testing.B) {
	vals := relayValues(b, 4)
	b.Run("fast", func(b *testing.B) {
		var rec store.RunEventRecord
		for i := 0; b.Loop(); i++ {
			_ = DecodeValue(vals[i%len(vals)], &rec)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var rec store.RunEventRecord
			_ = json.Unmarshal(vals[i%len(vals)], &rec)
		}
	})
}
