package store

import "slices"

// Report is what a reviewer reads first: the files the session touched and
// the commands it ran.
type Report struct {
	Files    []FileTouched `json:"files"`
	Commands []CommandRun  `json:"commands"`
}

// FileTouched counts the edit and read steps on one path. A full write of
// a path the session had not touched before counts as created.
type FileTouched struct {
	Path    string `json:"path"`
	Created int    `json:"created"`
	Edited  int    `json:"edited"`
	Read    int    `json:"read"`
	Failed  int    `json:"failed"` // of those steps, how many failed
}

// CommandRun groups the runs of one distinct command line. A reference-only
// command whose text was never recorded groups under the empty command.
type CommandRun struct {
	Command         string  `json:"command"`
	Runs            int     `json:"runs"`
	Failed          int     `json:"failed"`
	ExitCodes       []int64 `json:"exit_codes"` // distinct codes seen, ascending
	OutputNotInline bool    `json:"output_not_inline"`
}

// BuildReport computes the report from steps in seq order, files and
// commands in order of first appearance.
func BuildReport(steps []Step) Report {
	r := Report{Files: []FileTouched{}, Commands: []CommandRun{}}
	files, commands := map[string]int{}, map[string]int{}
	for _, st := range steps {
		failed := st.Outcome == "failed"
		switch st.Type {
		case TypeEdit, TypeRead:
			i, seen := files[st.Payload.Path]
			if !seen {
				i = len(r.Files)
				files[st.Payload.Path] = i
				r.Files = append(r.Files, FileTouched{Path: st.Payload.Path})
			}
			f := &r.Files[i]
			switch {
			case st.Type == TypeRead:
				f.Read++
			case !seen && st.Payload.IsFullWrite != nil && *st.Payload.IsFullWrite:
				f.Created++
			default:
				f.Edited++
			}
			if failed {
				f.Failed++
			}
		case TypeCommand:
			var line string
			if st.Payload.Command != nil {
				line = *st.Payload.Command
			}
			i, seen := commands[line]
			if !seen {
				i = len(r.Commands)
				commands[line] = i
				r.Commands = append(r.Commands, CommandRun{Command: line, ExitCodes: []int64{}})
			}
			c := &r.Commands[i]
			c.Runs++
			if failed {
				c.Failed++
			}
			if code := st.Payload.ExitCode; code != nil && !slices.Contains(c.ExitCodes, *code) {
				c.ExitCodes = append(c.ExitCodes, *code)
				slices.Sort(c.ExitCodes)
			}
			if st.ContentStatus == ContentReferenceOnly || st.Payload.OutputRef != nil {
				c.OutputNotInline = true
			}
		}
	}
	return r
}
