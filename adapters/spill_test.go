package adapters

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

// fillAll sets every field reachable from v to a value that differs from
// its zero value, so a field the spill forgets shows in the round trip.
func fillAll(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int64:
		v.SetInt(int64(-*n * 1000))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fillAll(t, v.Field(i), n)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"k":[1, 2]}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(t, v.Index(i), n)
		}
	case reflect.Array:
		for i := range v.Len() {
			fillAll(t, v.Index(i), n)
		}
	case reflect.Map:
		// Cut: only set on reads from the store, never spilled.
	default:
		t.Fatalf("fillAll: no rule for %s", v.Type())
	}
}

func TestSpillKeepsEveryField(t *testing.T) {
	sp, err := NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var full store.Step
	n := 0
	fillAll(t, reflect.ValueOf(&full).Elem(), &n)
	empty := ""
	f := false
	cases := map[string]store.Step{
		"every field set": full,
		"zero":            {},
		"empty but present": {Channels: []string{}, Flags: []store.Flag{}, Error: &store.StepError{},
			Payload: store.Payload{Stdout: &empty, Text: &empty, Raw: json.RawMessage{}, IsFullWrite: &f, Range: &[2]int64{}}},
	}
	refs := map[string]*SpilledStep{}
	for name, st := range cases {
		if refs[name], err = sp.Put(&st); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range cases {
		got, err := sp.get(refs[name].ref)
		if err != nil {
			t.Fatalf("%s: Get: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", name, got, want)
		}
	}
}

func TestSpillRefusesACorruptStep(t *testing.T) {
	sp, err := NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	out, err := sp.Put(&store.Step{ID: "a", Payload: store.Payload{Text: Text("hello")}})
	if err != nil {
		t.Fatal(err)
	}
	ref := out.ref
	ref.N-- // a step cut short
	if _, err := sp.get(ref); err == nil {
		t.Error("Get of a step cut short: no error")
	}
}

// TestSpillWritesInLargePieces puts 2,000 small steps and reads each back:
// the steps reach the file in pieces of spillWrite bytes (plus the last,
// before the first read), not one write per step.
func TestSpillWritesInLargePieces(t *testing.T) {
	sp, err := NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var outs []*SpilledStep
	sizes := map[int64]bool{} // file sizes seen after each Put
	for i := range 2000 {
		out, err := sp.Put(&store.Step{ID: fmt.Sprint("s", i), Payload: store.Payload{Text: Text(strings.Repeat("x", 300))}})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
		fi, err := sp.f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		sizes[fi.Size()] = true
	}
	if len(sizes) > 1+int(sp.size/spillWrite) {
		t.Errorf("the spill file had %d sizes over 2,000 puts of %d bytes; want a write per %d bytes", len(sizes), sp.size, spillWrite)
	}
	for i, o := range outs {
		st, err := sp.get(o.ref)
		if err != nil || st.ID != fmt.Sprint("s", i) || st.Payload.Text == nil || len(*st.Payload.Text) != 300 {
			t.Fatalf("get(step %d) = %q, %v; want it back whole", i, st.ID, err)
		}
	}
}

// TestSpillFileHoldsNoText puts steps whose text has a marker, of sizes
// that start them at every offset of the cipher's blocks: the file never
// holds the marker (what its blocks keep on disk after the import), and
// every step reads back as it was put.
func TestSpillFileHoldsNoText(t *testing.T) {
	sp, err := NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	const marker = "SPILLMARKER-4f1c9"
	var outs []*SpilledStep
	var texts []string
	for i := range 20000 { // about 1.6 MB: several writes, each from an offset inside a block
		text := strings.Repeat("y", i%37) + marker + fmt.Sprint(i)
		out, err := sp.Put(&store.Step{ID: fmt.Sprint("m", i), Payload: store.Payload{Text: Text(text)}})
		if err != nil {
			t.Fatal(err)
		}
		outs, texts = append(outs, out), append(texts, text)
	}
	for i, o := range outs {
		st, err := sp.get(o.ref)
		if err != nil || st.Payload.Text == nil || *st.Payload.Text != texts[i] {
			t.Fatalf("get(step %d) = %v, %v; want its text back", i, st.Payload.Text, err)
		}
	}
	raw := make([]byte, sp.written)
	if _, err := sp.f.ReadAt(raw, 0); err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || strings.Contains(string(raw), "SPILLMARKER") || strings.Contains(string(raw), "yyyyyyyy") {
		t.Errorf("the spill file (%d bytes) holds the steps' text as written; want it encrypted", len(raw))
	}
}
