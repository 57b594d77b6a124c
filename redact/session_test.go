package redact

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// notMasked lists every string of a session that Session leaves as it is,
// with the reason. A field missing from here must be masked.
var notMasked = map[string]string{
	"ID":                       "the session's key: reads go by it; shown in the report's head, where the scan of the rendered report withholds it (500) before anything is sent",
	"StartedAt":                "a timestamp, validated on write",
	"EndedAt":                  "a timestamp, validated on write",
	"UpdatedAt":                "the store's own change stamp",
	"Summary.StepsByType":      "keys are the closed enumeration of step types",
	"Summary.LastStepAt":       "a timestamp, validated on write",
	"Segments[].StartedAt":     "a timestamp, validated on write",
	"Segments[].EndedAt":       "a timestamp, validated on write",
	"Actors[].ID":              "a key, not shown in the report",
	"Actors[].ParentID":        "a key, not shown in the report",
	"Turns[].ID":               "a key: the report reads a turn's steps by it; not shown",
	"Turns[].SessionID":        "a key, not shown in the report",
	"Turns[].ActorID":          "a key, not shown in the report",
	"Turns[].PromptID":         "a key, not shown in the report",
	"Turns[].StartedAt":        "a timestamp, validated on write",
	"Turns[].StepIDs[]":        "keys, not shown in the report",
	"Gaps[].TurnID":            "a key, not shown in the report (whose reads leave no step out: it has no gaps)",
	"Gaps[].FirstAt":           "a timestamp, validated on write",
	"Steps[].ID":               "a key, not shown in the report",
	"Steps[].SessionID":        "a key, not shown in the report",
	"Steps[].TurnID":           "a key, not shown in the report",
	"Steps[].ActorID":          "a key, not shown in the report",
	"Steps[].At":               "a timestamp, validated on write",
	"Steps[].Type":             "a closed enumeration, validated on write",
	"Steps[].ContentStatus":    "a closed enumeration, validated on write",
	"Steps[].Flags[].Severity": "a closed enumeration, validated on write",
	"Steps[].Cut":              "keys are the store's own field names",
	"Usage.Pricing.Source":     "the embedded price table's own name, not the agent's",
	"Usage.Pricing.AsOf":       "the embedded price table's date",
	"Usage.Turns[].TurnID":     "a key, not shown in the report",
	"Report.Turns[].TurnID":    "a key, not shown in the report",
	"Usage.Turns[].First":      "a timestamp, validated on write",
	"Usage.Turns[].Last":       "a timestamp, validated on write",
	"Usage.Source":             "a closed enumeration (file, otel) the store sets",
	"Notes[].CreatedAt":        "a timestamp the store sets",
	"Notes[].UpdatedAt":        "a timestamp the store sets",
}

// TestSessionMasksEveryField puts a secret into every string of a session,
// its steps included (a field added later too), masks it, and fails for
// any string still holding the secret that notMasked does not name.
func TestSessionMasksEveryField(t *testing.T) {
	secret := "AKIA" + "QWERTYUIOPASDFGH"
	var d store.SessionDetail
	eachText(reflect.ValueOf(&d).Elem(), "", func(path string, v reflect.Value) {
		switch {
		case v.Kind() == reflect.String:
			v.SetString("key " + secret + " here")
		case v.Type() == reflect.TypeFor[json.RawMessage]():
			v.SetBytes([]byte(`{"url": "https://x.example/?key=` + secret + `"}`))
		case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
			v.Set(reflect.MakeMap(v.Type()))
			v.SetMapIndex(reflect.ValueOf(secret), reflect.Zero(v.Type().Elem()))
		default:
			t.Errorf("%s is a %s: teach this test to fill it", path, v.Type())
		}
	})
	Session(NewMasker("/home/alice"), &d)

	seen := map[string]bool{}
	eachText(reflect.ValueOf(&d).Elem(), "", func(path string, v reflect.Value) {
		seen[path] = true
		holds := false
		switch {
		case v.Kind() == reflect.String:
			holds = strings.Contains(v.String(), secret)
		case v.Kind() == reflect.Map:
			holds = slices.ContainsFunc(v.MapKeys(), func(k reflect.Value) bool { return strings.Contains(k.String(), secret) })
		default:
			holds = strings.Contains(string(v.Bytes()), secret)
			if !json.Valid(v.Bytes()) {
				t.Errorf("%s = %s after masking; want valid JSON", path, v.Bytes())
			}
		}
		_, listed := notMasked[path]
		switch {
		case holds && !listed:
			t.Errorf("Session leaves the secret in %s; mask it in redact.Session or redact.Step, or list it in notMasked with the reason", path)
		case !holds && listed:
			t.Errorf("%s is masked but listed in notMasked; drop it from the list", path)
		}
	})
	for path := range notMasked {
		if !seen[path] {
			t.Errorf("notMasked names %s, which store.SessionDetail does not have", path)
		}
	}
}

// eachText calls f with every string, JSON text or map reachable from v,
// named by its Go field path (embedded structs flattened, [] for each
// element), giving each nil pointer a value and each slice one element so
// that nothing is out of reach.
func eachText(v reflect.Value, path string, f func(path string, v reflect.Value)) {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch v.Kind() {
	case reflect.String, reflect.Map:
		f(path, v)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		eachText(v.Elem(), path, f)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			switch {
			case !sf.IsExported():
			case sf.Anonymous:
				eachText(v.Field(i), path, f)
			default:
				eachText(v.Field(i), join(sf.Name), f)
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			f(path, v)
			return
		}
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			eachText(v.Index(i), path+"[]", f)
		}
	case reflect.Array:
		for i := range v.Len() {
			eachText(v.Index(i), path+"[]", f)
		}
	case reflect.Interface, reflect.Chan, reflect.Func:
		f(path, v) // unknown to the test: it asks to be taught
	}
}

func TestStepPlace(t *testing.T) {
	m := NewMasker("")
	s := store.Step{Seq: 42, Payload: store.Payload{ToolName: "fetch AKIA" + "QWERTYUIOPASDFGH"}}
	Step(m, &s)
	where := m.Findings()[0].Where[0]
	if seq, field, ok := StepPlace(where); !ok || seq != 42 || field != "payload.tool_name" {
		t.Errorf("StepPlace(%q) = %d, %q, %v; want 42, payload.tool_name, true", where, seq, field, ok)
	}
	if _, _, ok := StepPlace("session.workspace.root"); ok {
		t.Error("StepPlace(session.workspace.root) is a step; want a session field")
	}
}
