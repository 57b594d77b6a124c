package views

// VerdictView is a session's review verdict as shown.
type VerdictView struct {
	State    string // reviewed, approved, needs_attention or a reviewer's word
	Note     string
	Reviewer string
}

// StateClass is the CSS class of a verdict state: one per common state,
// "custom" for any other word.
func (v VerdictView) StateClass() string {
	switch v.State {
	case "reviewed", "approved", "needs_attention":
		return "verdict-" + v.State
	}
	return "verdict-custom"
}

// Hover is what a verdict's badge in the list shows when hovered: who
// judged the session and why, as far as the verdict says.
func (v VerdictView) Hover() string {
	switch {
	case v.Reviewer != "" && v.Note != "":
		return "by " + v.Reviewer + ": " + v.Note
	case v.Reviewer != "":
		return "by " + v.Reviewer
	}
	return v.Note
}

// ReviewForms are the routes and defaults the verdict and note forms use.
type ReviewForms struct {
	VerdictURL string // PUT sets, DELETE clears
	NotesURL   string // POST adds; NotesURL/<id> edits and deletes
	Reviewer   string // the name filled in until the reviewer types one
	// User is a team server's signed-in user, who is the reviewer and
	// author of what they write: shown instead of a name to type. "" on
	// the local service.
	User   string
	States []string // the common verdict states, offered first
	// Next is the session a reviewer goes on to: the next not reviewed
	// (handlers.nextUnreviewed); nil when no other session waits.
	Next *SessionLink
}

// SessionLink links to a session by its title.
type SessionLink struct {
	Title, Href string
}

// NoteView is a reviewer's note on a step.
type NoteView struct {
	ID      int64
	Seq     int64
	StepRef string // #step-<seq>
	Author  string
	Text    string
	At      string // when it was written or last edited (RFC 3339)
	Edited  bool
	// Editable offers Edit and Delete: on the page outside the demo, and
	// on a team server only to the note's author.
	Editable bool
}

// VerdictChip filters the list by one verdict state.
type VerdictChip struct {
	Label  string
	Href   string
	Count  int
	Active bool
}

// ChangesView is the Changes section, or the next files of it: at most a
// page of files with their diffs, then the control that loads the next.
type ChangesView struct {
	Files   []FileChangeView
	Total   int    // files the session changed
	More    int    // files after these, not shown
	Next    int    // files the control loads
	MoreURL string // the next files' fragment
}

// FileChangeView is the net change of one file over the session.
type FileChangeView struct {
	Path    string // as recorded
	Name    string // as shown: relative to the workspace when in it
	DOMID   string // change-<position>: a path may be of any length
	Status  string // created, edited; ", removed" when a command removed it
	Added   int
	Removed int
	Failed  bool // an edit of it failed or was rejected
	// Net is the one diff from before the first edit to after the last,
	// when the edits tell the content; else Edits holds each edit's diff.
	Net       []DiffLine
	NetShown  bool
	Edits     []EditChangeView
	More      int    // diff lines left out past the page's bound
	MoreEdits int    // edits left out past the page's bound (their lines are not counted)
	BodyURL   string // where its steps and diffs load from when opened; "" when in the page
}

// EditChangeView is one edit of a file, linked to its step.
type EditChangeView struct {
	Seq    int64
	Href   string // #step-<seq>
	Failed bool
	Diff   []DiffLine // empty when shown in the net diff, or cut
	Cut    bool       // its text was past the bound: open the step
	// A command whose line writes the file; Unknown: what it wrote is not
	// in its line.
	Command, Unknown bool
}
