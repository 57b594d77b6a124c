package handlers

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// maxDiffCells bounds the line-diff table (old lines × new lines); larger
// edits are shown as all old lines removed, then all new lines added.
const maxDiffCells = 4_000_000

// editDiff renders an edit step's change: from its structured patch when
// the agent recorded one, else from the old and new strings. A full write
// is the file's new content.
func editDiff(p store.Payload) []views.DiffLine {
	if d := patchDiff(p.StructuredPatch); d != nil {
		return d
	}
	newLines := splitLines(deref(p.NewString))
	if p.IsFullWrite != nil && *p.IsFullWrite && p.OldString == nil {
		out := make([]views.DiffLine, len(newLines))
		for i, l := range newLines {
			out[i] = views.DiffLine{Kind: "add", Text: "+" + l}
		}
		return out
	}
	return lineDiff(splitLines(deref(p.OldString)), newLines)
}

// hunk is one hunk of a structured patch as agents record it (Claude
// Code's shape: lines prefixed with "+", "-" or " ").
type hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

func patchDiff(raw json.RawMessage) []views.DiffLine {
	var hunks []hunk
	if len(raw) == 0 || json.Unmarshal(raw, &hunks) != nil || len(hunks) == 0 {
		return nil
	}
	var out []views.DiffLine
	for _, h := range hunks {
		out = append(out, views.DiffLine{Kind: "hunk", Text: fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.OldStart, h.OldLines, h.NewStart, h.NewLines)})
		for _, l := range h.Lines {
			kind := "ctx"
			switch {
			case strings.HasPrefix(l, "+"):
				kind = "add"
			case strings.HasPrefix(l, "-"):
				kind = "del"
			}
			out = append(out, views.DiffLine{Kind: kind, Text: l})
		}
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lineDiff is a longest-common-subsequence diff of two line lists.
func lineDiff(a, b []string) []views.DiffLine {
	var out []views.DiffLine
	del := func(l string) { out = append(out, views.DiffLine{Kind: "del", Text: "-" + l}) }
	add := func(l string) { out = append(out, views.DiffLine{Kind: "add", Text: "+" + l}) }
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			del(l)
		}
		for _, l := range b {
			add(l)
		}
		return out
	}
	// lcs[i][j]: length of the LCS of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, views.DiffLine{Kind: "ctx", Text: " " + a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			del(a[i])
			i++
		default:
			add(b[j])
			j++
		}
	}
	for ; i < len(a); i++ {
		del(a[i])
	}
	for ; j < len(b); j++ {
		add(b[j])
	}
	return out
}
