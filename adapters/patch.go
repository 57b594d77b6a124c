package adapters

import "strings"

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
