package handlers

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// Bounds of the Changes section: context lines kept around each change,
// diff lines shown per file, and files shown at first and per "more"
// control, so a page's first delivery does not grow with the session.
const (
	changeContext = 3
	changeLines   = 2000
	changeEdits   = 200 // edits listed per file; the rest are counted
	firstChanges  = 20  // files in the page
	moreChanges   = 50  // files added by the more-files control
	openChanges   = 5   // files open at first, with their diffs, when no more
)

// fileChanges is GET /api/sessions/:id/changes: each file the session
// created, edited or removed, with its edits and, where known, its content
// before and after.
func fileChanges(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		files, err := st.FileChanges(r.Context(), sessionID(r))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, changesAnswer{SessionID: sessionID(r), Files: files})
	})
}

// changesAnswer is the answer of the changes route.
type changesAnswer struct {
	SessionID string             `json:"session_id"`
	Files     []store.FileChange `json:"files"`
}

// changesFragment is GET /session/changes?id=&from=: the files of the
// Changes section from position from, a page of them, then the control
// for the next page.
func changesFragment(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, err := strconv.Atoi(r.URL.Query().Get("from"))
		if err != nil || from <= 0 {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "from must be a file position above 0"})
			return
		}
		id := r.URL.Query().Get("id")
		d, err := src.Detail(r.Context(), id, store.DetailQuery{Turns: 1, NoSteps: true}) // for its workspace
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		files, err := src.FileChanges(r.Context(), id)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		render(w, r, log, http.StatusOK, views.ChangesAfter(changesView(id, d.Workspace.Root, files, from, moreChanges)))
	})
}

// changeFragment is GET /session/change?id=&path=: the steps and diffs of
// the Changes section's file with that path, for opening it. By path, not
// by position, so a file opened after the list changed is still itself.
func changeFragment(src PageSource, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		if path == "" {
			writeError(w, r, log, &statusError{http.StatusBadRequest, "path is required"})
			return
		}
		files, err := src.FileChanges(r.Context(), r.URL.Query().Get("id"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		for i, f := range files {
			if f.Path == path {
				render(w, r, log, http.StatusOK, views.ChangeBody(changeView(i, f)))
				return
			}
		}
		writeError(w, r, log, &statusError{http.StatusNotFound, "the session changed no file at that path"})
	})
}

// changesView is the Changes section from the file at position from: at
// most n files, in the store's order, each named by its path in the
// workspace root when in it (inWorkspace), and the control for the next
// ones.
// Only the files shown are diffed; beyond 5 files each is closed, and its
// diffs load when it is opened.
func changesView(id, root string, files []store.FileChange, from, n int) views.ChangesView {
	from = min(from, len(files))
	end := min(from+n, len(files))
	c := views.ChangesView{Total: len(files), More: len(files) - end}
	for i := from; i < end; i++ {
		v := changeView(i, files[i])
		v.Name = shorten(inWorkspace(root, files[i].Path), headChars)
		if len(files) > openChanges {
			v.Net, v.Edits = nil, nil // only counted: ChangeBody renders them from BodyURL
			v.BodyURL = pageURLs{id}.with("/session/change", "path", files[i].Path)
		}
		c.Files = append(c.Files, v)
	}
	if c.More > 0 {
		c.Next = min(c.More, moreChanges)
		c.MoreURL = pageURLs{id}.with("/session/changes", "from", strconv.Itoa(end))
	}
	return c
}

// changeView turns the change of the file at position i into what the
// Changes section shows: one diff from the content before to after when
// it is known, else each edit's own diff; every edit links to its step.
func changeView(i int, f store.FileChange) views.FileChangeView {
	v := views.FileChangeView{Path: shorten(f.Path, headChars), DOMID: "change-" + strconv.Itoa(i+1), Failed: f.Failed, NetShown: f.Known}
	switch {
	case f.Created:
		v.Status = "created"
	case len(f.Edits) > 0:
		v.Status = "edited"
	}
	if f.DeletedAt != nil {
		if v.Status != "" {
			v.Status += ", "
		}
		v.Status += "removed at step " + strconv.FormatInt(*f.DeletedAt, 10)
	}
	left := changeLines
	show := func(d []views.DiffLine) []views.DiffLine {
		for _, l := range d {
			switch l.Kind {
			case "add":
				v.Added++
			case "del":
				v.Removed++
			}
		}
		d = trimContext(d, changeContext)
		if len(d) > left {
			v.More += len(d) - left
			d = d[:left]
		}
		left -= len(d)
		return d
	}
	if f.Known {
		v.Net = show(lineDiff(splitLines(f.Before), splitLines(f.After)))
	}
	for i, e := range f.Edits {
		if i == changeEdits {
			v.MoreEdits = len(f.Edits) - i
			break
		}
		ev := views.EditChangeView{Seq: e.Seq, Href: "#" + stepDOMID(e.Seq), Failed: e.Failed, Cut: e.Cut,
			Command: e.Command, Unknown: e.Command && e.New == nil && !e.Cut}
		if !f.Known && !e.Cut && !ev.Unknown {
			d := lineDiff(splitLines(deref(e.Old)), splitLines(deref(e.New)))
			if e.Failed {
				ev.Diff = trimContext(d, changeContext) // shown, but not counted: it changed nothing
			} else {
				ev.Diff = show(d)
			}
		}
		v.Edits = append(v.Edits, ev)
	}
	return v
}

// trimContext keeps the unchanged lines within n of a change; each run of
// lines left out becomes one "…" line. Each line is cut at headChars: the
// whole edit is one click away, on its step.
func trimContext(d []views.DiffLine, n int) []views.DiffLine {
	near := make([]bool, len(d))
	for i, l := range d {
		if l.Kind == "add" || l.Kind == "del" {
			for j := max(0, i-n); j <= min(len(d)-1, i+n); j++ {
				near[j] = true
			}
		}
	}
	var out []views.DiffLine
	for i, l := range d {
		if shown, more := clip(l.Text, headChars); more > 0 {
			l.Text = shown + "… (" + strconv.Itoa(more) + " more characters)"
		}
		switch {
		case near[i] || l.Kind != "ctx":
			out = append(out, l)
		case len(out) == 0 || out[len(out)-1].Kind != "hunk":
			out = append(out, views.DiffLine{Kind: "hunk", Text: "…"})
		}
	}
	return out
}
