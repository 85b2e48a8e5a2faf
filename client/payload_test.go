package client

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"
)

// TestPayloadStructs_AreTheSchemas: each payload struct has the fields the
// JSON Schemas of store/validate/schemas type for its event types (RunEvents
// v1 section 4.3), under the same JSON names, and no other.
func TestPayloadStructs_AreTheSchemas(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "store", "validate", "schemas")
	read := func(name string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	obj := func(v any, path ...string) map[string]any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		m, _ := v.(map[string]any)
		return m
	}
	envelope := read("envelope.schema.json")
	refRE := regexp.MustCompile(`#/\$defs/(\w+)$`)
	schemaFields := func(eventType string) []string {
		payload := obj(read(eventType+".schema.json"), "properties", "payload")
		var names []string
		for k := range obj(envelope, "$defs", "payload", "properties") {
			names = append(names, k)
		}
		for k := range obj(payload, "properties") {
			names = append(names, k)
		}
		if ref, _ := payload["$ref"].(string); ref != "" {
			for k := range obj(envelope, "$defs", refRE.FindStringSubmatch(ref)[1], "properties") {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		return names
	}
	for _, c := range []struct {
		payload any
		types   []string
		// left out of the struct: set through Extra
		omitted []string
	}{
		{RunStarted{}, []string{EventRunStarted}, nil},
		{StepCompleted{}, []string{EventStepCompleted}, nil},
		{Failure{}, []string{EventRunFailed}, nil},
		{Failure{}, []string{EventStepFailed}, []string{"artifacts"}},
		{StepSkipped{}, []string{EventStepSkipped}, nil},
		{Signal{}, []string{EventRunPaused, EventRunResumed}, nil},
		{RunCompleted{}, []string{EventRunCompleted}, nil},
	} {
		got := jsonNames(reflect.TypeOf(c.payload))
		got = append(got, c.omitted...)
		slices.Sort(got)
		for _, typ := range c.types {
			if want := schemaFields(typ); !slices.Equal(got, want) {
				t.Errorf("%T for %s: fields %v, its schema's %v", c.payload, typ, got, want)
			}
		}
	}
}
