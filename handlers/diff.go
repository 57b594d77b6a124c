package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// maxDiffCells bounds the line-diff table (old lines × new lines), and
// maxDiffLines the lines split apart; larger edits are shown as all old
// lines removed, then all new lines added, each as one block.
const (
	maxDiffCells = 4_000_000
	maxDiffLines = 20_000
)

// editDiff renders an edit step's change: from its structured patch when
// the agent recorded one, else from the old and new strings. A full write
// is the file's new content. A structured patch is cut after limit
// characters (0: none), which the bool reports; the strings come cut by
// the store.
func editDiff(p store.Payload, limit int) ([]views.DiffLine, bool) {
	if d, cut := patchDiff(p.StructuredPatch, limit); d != nil {
		return d, cut
	}
	oldText, newText := deref(p.OldString), deref(p.NewString)
	if strings.Count(oldText, "\n")+strings.Count(newText, "\n") > maxDiffLines {
		return blockDiff(oldText, newText), false
	}
	return lineDiff(splitLines(oldText), splitLines(newText)), false
}

// blockDiff shows every old line removed, then every new line added, in
// one element each: rendered at about the size of the two texts.
func blockDiff(oldText, newText string) []views.DiffLine {
	var out []views.DiffLine
	if oldText != "" {
		out = append(out, views.DiffLine{Kind: "del", Text: "-" + strings.ReplaceAll(strings.TrimSuffix(oldText, "\n"), "\n", "\n-")})
	}
	if newText != "" {
		out = append(out, views.DiffLine{Kind: "add", Text: "+" + strings.ReplaceAll(strings.TrimSuffix(newText, "\n"), "\n", "\n+")})
	}
	return out
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

func patchDiff(raw json.RawMessage, limit int) ([]views.DiffLine, bool) {
	var hunks []hunk
	if len(raw) == 0 || json.Unmarshal(raw, &hunks) != nil || len(hunks) == 0 {
		return nil, false
	}
	var out []views.DiffLine
	left := limit
	// keep adds l, cut to the characters left; false when it was cut.
	keep := func(l views.DiffLine) bool {
		if limit > 0 {
			if left == 0 {
				return false
			}
			var more int
			l.Text, more = clip(l.Text, left)
			left -= utf8.RuneCountInString(l.Text)
			if more > 0 {
				out = append(out, l)
				return false
			}
		}
		out = append(out, l)
		return true
	}
	for _, h := range hunks {
		if !keep(views.DiffLine{Kind: "hunk", Text: fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.OldStart, h.OldLines, h.NewStart, h.NewLines)}) {
			return out, true
		}
		for _, l := range h.Lines {
			kind := "ctx"
			switch {
			case strings.HasPrefix(l, "+"):
				kind = "add"
			case strings.HasPrefix(l, "-"):
				kind = "del"
			}
			if !keep(views.DiffLine{Kind: kind, Text: l}) {
				return out, true
			}
		}
	}
	return out, false
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
		return blockDiff(strings.Join(a, "\n"), strings.Join(b, "\n"))
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
