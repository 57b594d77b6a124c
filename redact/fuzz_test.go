package redact

import "testing"

// FuzzMask checks, for any text, that masking never panics, never leaves a
// definite secret behind, gives the same output when repeated, and leaves its
// own output alone.
func FuzzMask(f *testing.F) {
	for _, tc := range secretCases() {
		f.Add(tc.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m := NewMasker("/home/alice")
		out := m.Mask(text, "fuzz")
		if rule, ok := FirstDefinite(out); ok {
			t.Fatalf("FirstDefinite(Mask(%q)) = %q; want no match in %q", text, rule, out)
		}
		if again := m.Mask(text, "fuzz"); again != out {
			t.Fatalf("second Mask(%q) = %q; want %q", text, again, out)
		}
		if twice := m.Mask(out, "fuzz"); twice != out {
			t.Fatalf("Mask(%q) = %q; want its input unchanged", out, twice)
		}
		last := 0
		for _, mt := range Scan(text) {
			if mt.Start < last || mt.End <= mt.Start || mt.End > len(text) {
				t.Fatalf("Scan(%q) has %v after offset %d; want ordered, non-empty, in range", text, mt, last)
			}
			last = mt.End
		}
	})
}
