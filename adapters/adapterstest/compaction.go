package adapterstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// CompactedMidTurn writes into dir a variant of the real Claude Code
// sample agentlogs_crud.jsonl (one turn of tool calls) with the two
// compaction records of the real sample agentlogs_clear_compact.jsonl
// (its compact_boundary and the summary after it) put after line after
// (1-based), given that line's time, session id, version and working
// folder (a CLI of another version would be a resume), so a compaction
// falls inside the turn. testdata is the folder holding both
// samples; it returns the variant's path.
func CompactedMidTurn(t testing.TB, testdata, dir string, after int) string {
	t.Helper()
	crud := readLines(t, filepath.Join(testdata, "agentlogs_crud.jsonl"))
	var compaction [][]byte
	for _, ln := range readLines(t, filepath.Join(testdata, "agentlogs_clear_compact.jsonl")) {
		var r struct {
			Subtype          string `json:"subtype"`
			IsCompactSummary bool   `json:"isCompactSummary"`
		}
		if json.Unmarshal(ln, &r) == nil && (r.Subtype == "compact_boundary" || r.IsCompactSummary) {
			compaction = append(compaction, ln)
		}
	}
	if len(compaction) != 2 || after < 1 || after >= len(crud) {
		t.Fatalf("CompactedMidTurn: %d compaction records, after %d of %d lines; want 2 inside", len(compaction), after, len(crud))
	}
	var at struct {
		SessionID string `json:"sessionId"`
		Timestamp string `json:"timestamp"`
		Version   string `json:"version"`
		Cwd       string `json:"cwd"`
	}
	if err := json.Unmarshal(crud[after-1], &at); err != nil || at.Timestamp == "" {
		t.Fatalf("CompactedMidTurn: line %d has no timestamp (%v)", after, err)
	}
	var out bytes.Buffer
	for i, ln := range crud {
		out.Write(ln)
		out.WriteByte('\n')
		if i+1 != after {
			continue
		}
		for _, c := range compaction {
			var rec map[string]any
			if err := json.Unmarshal(c, &rec); err != nil {
				t.Fatal(err)
			}
			rec["timestamp"], rec["sessionId"], rec["version"], rec["cwd"] = at.Timestamp, at.SessionID, at.Version, at.Cwd
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
	}
	path := filepath.Join(dir, "agentlogs_crud_compacted.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
