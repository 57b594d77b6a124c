package adapters

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/agentreview/service/store"
)

// PatchFile is one file's part of an apply_patch patch
// ("*** Begin Patch" ... "*** End Patch"), as Codex and Cline write them.
type PatchFile struct {
	Path string
	// Op is add, update or delete.
	Op string
	// Text is this file's part of the patch, from its "*** ... File:" line.
	Text string
}

// PatchFiles splits an apply_patch patch by file. Text that is not such a
// patch gives no files.
func PatchFiles(patch string) []PatchFile {
	var out []PatchFile
	var cur *PatchFile
	var body []string
	flush := func() {
		if cur != nil {
			cur.Text = strings.Join(body, "\n")
			out = append(out, *cur)
		}
		cur, body = nil, nil
	}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSuffix(line, "\r")
		op, path, ok := fileHeader(line)
		switch {
		case ok:
			flush()
			cur = &PatchFile{Path: path, Op: op}
			body = []string{line}
		case line == "*** End Patch" || line == "*** Begin Patch":
			flush()
		case cur != nil:
			body = append(body, line)
		}
	}
	flush()
	return out
}

func fileHeader(line string) (op, path string, ok bool) {
	for _, h := range []struct{ prefix, op string }{
		{"*** Add File: ", "add"}, {"*** Update File: ", "update"}, {"*** Delete File: ", "delete"},
	} {
		if p, found := strings.CutPrefix(line, h.prefix); found {
			if p = strings.TrimSpace(p); p != "" {
				return h.op, p, true
			}
		}
	}
	return "", "", false
}

// PatchHunk is one hunk of a file's part of a patch, in the shape agents
// record structured patches (Claude Code's: lines prefixed with "+", "-"
// or " "). An apply_patch hunk has no line numbers, so its starts are 0;
// Op ("add", "update" or "delete") and Patch (the file's part of the
// patch, as the agent wrote it) are on a file's first hunk only.
type PatchHunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
	Context  string   `json:"context,omitempty"`
	Op       string   `json:"op,omitempty"`
	Patch    string   `json:"patch,omitempty"`
}

// Hunks splits a file's part of a patch at its "@@" lines; lines before
// the first (an added file's) make a hunk of their own. A deleted file has
// one hunk without lines.
func (f PatchFile) Hunks() []PatchHunk {
	var out []PatchHunk
	var cur *PatchHunk
	lines := strings.Split(f.Text, "\n")[1:] // after the "*** ... File:" line
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "@@"):
			out = append(out, PatchHunk{Context: strings.TrimSpace(strings.TrimPrefix(l, "@@"))})
			cur = &out[len(out)-1]
			continue
		case strings.HasPrefix(l, "*** "): // "*** Move to:", "*** End of File"
			continue
		case l == "" || !strings.ContainsAny(l[:1], "+- "):
			continue
		}
		if cur == nil {
			out = append(out, PatchHunk{})
			cur = &out[len(out)-1]
		}
		cur.Lines = append(cur.Lines, l)
		if l[0] != '+' {
			cur.OldLines++
		}
		if l[0] != '-' {
			cur.NewLines++
		}
	}
	if len(out) == 0 {
		out = []PatchHunk{{Lines: []string{}}}
	}
	out[0].Op, out[0].Patch = f.Op, f.Text
	return out
}

// PatchEdits are the payloads of the edit steps of a patch (PatchFiles,
// each its Edit against cwd, the folder it ran in), its relative paths
// made absolute while the session's copies of folders stay within their
// bound (Folder); past it a relative path stays as the patch wrote it,
// which the review app places in the workspace root.
func (b *Builder) PatchEdits(patch, cwd string) []store.Payload {
	var out []store.Payload
	for _, f := range PatchFiles(patch) {
		dir := ""
		if !path.IsAbs(f.Path) && path.IsAbs(cwd) {
			dir = b.Folder(cwd)
		}
		out = append(out, f.Edit(dir))
	}
	return out
}

// Edit is the payload of an edit step for one file of a patch: its path
// made absolute against cwd (the turn's working folder) when it is
// relative, so one file has one name whichever agent touched it; an added
// file is a full write of its lines; the hunks are the structured patch,
// and their old and new sides (context with removed lines, context with
// added lines) the old and new strings.
func (f PatchFile) Edit(cwd string) store.Payload {
	p := store.Payload{Path: f.Path, IsFullWrite: Bool(f.Op == "add")}
	if !path.IsAbs(p.Path) && path.IsAbs(cwd) {
		p.Path = path.Join(cwd, p.Path)
	}
	hunks := f.Hunks()
	p.StructuredPatch, _ = json.Marshal(hunks)
	if f.Op == "delete" {
		return p
	}
	var oldSide, newSide []string
	for _, h := range hunks {
		for _, l := range h.Lines {
			if l[0] != '+' {
				oldSide = append(oldSide, l[1:])
			}
			if l[0] != '-' {
				newSide = append(newSide, l[1:])
			}
		}
	}
	p.NewString = Text(strings.Join(newSide, "\n"))
	if f.Op != "add" {
		p.OldString = Text(strings.Join(oldSide, "\n"))
	}
	return p
}
