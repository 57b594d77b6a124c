package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzStepJSON keeps the hand-written JSON of a step's columns byte for
// byte what json.Marshal writes for the same values, errors included.
func FuzzStepJSON(f *testing.F) {
	f.Add("ls -la", "<b>&amp;</b>", "\u2028\u2029\x00\x1f\x7f", "caf\xe9 \xff", int64(-1), true, `{"a": [1, 2.5e3, "<x>"]}`)
	f.Add("", "\"quoted\" \\ back", "\b\f\n\r\t", "日本語 🎉", int64(1<<62), false, `[]`)
	f.Add("x", "y", "z", "w", int64(0), true, `{"a":`)
	f.Add("x", "y", "z", "w", int64(0), true, `{"a":"b c","d":[1,2.5,null,true],"e":{"f":"\u003c\\\""}}`)
	f.Add("x", "y", "z", "w", int64(0), true, "{\"a\":\"\u2028\",\"b\":\"\xe2\x80\"}")
	f.Add("x", "y", "z", "w", int64(0), true, `{"a":"x", "b":1}`)
	f.Add("x", "y", "z", "w", int64(0), true, `{"a":"x"}\n`)
	f.Add("x", "y", "z", "w", int64(0), true, `{"a":1,"a":2}`)
	f.Fuzz(func(t *testing.T, a, b, c, d string, n int64, yes bool, raw string) {
		payloads := []Payload{
			{},
			{Command: &a, Stdout: &b, Stderr: &c, ExitCode: &n, Cwd: &d, OutputRef: &a},
			{Path: a, OldString: &b, NewString: &c, StructuredPatch: json.RawMessage(raw), IsFullWrite: &yes, LandedInFinalState: &yes},
			{Path: d, Range: &[2]int64{n, -n}},
			{Role: a, Text: &b, TextRef: &c},
			{ToolName: d, Raw: json.RawMessage(raw)},
		}
		for _, p := range payloads {
			want, wantErr := json.Marshal(p)
			got, err := appendPayloadJSON(nil, &p)
			if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(got, want)) {
				t.Errorf("appendPayloadJSON(%+v) = %s, %v; want %s, %v", p, got, err, want, wantErr)
			}
		}
		e := StepError{Type: a, Message: b}
		if want, _ := json.Marshal(e); !bytes.Equal(appendErrorJSON(nil, &e), want) {
			t.Errorf("appendErrorJSON(%+v) = %s; want %s", e, appendErrorJSON(nil, &e), want)
		}
		ss := []string{a, b, c, d}
		if want, _ := json.Marshal(ss); !bytes.Equal(appendStringsJSON(nil, ss), want) {
			t.Errorf("appendStringsJSON(%q) = %s; want %s", ss, appendStringsJSON(nil, ss), want)
		}
		fs := []Flag{{Kind: a, Severity: b, Reason: c}, {Kind: d}}
		if want, _ := json.Marshal(fs); !bytes.Equal(appendFlagsJSON(nil, fs), want) {
			t.Errorf("appendFlagsJSON(%+v) = %s; want %s", fs, appendFlagsJSON(nil, fs), want)
		}
	})
}

// FuzzValidJSON checks validJSON answers as json.Valid does, for any bytes.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, "\"caf\xe9\"", `"\ud800"`, `"\ud800\udc00"`, `[1,2,]`, `01`, `1e5`, `-0.0`,
		` {"a" : [ 1 ] } `, `{"a":1} {}`, "\"\x00\"", `nul`, ``,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
