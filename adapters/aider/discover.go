// Package aider reads Aider's chat history (.aider.chat.history.md, the
// Markdown file Aider appends to at the root of the repository it runs in)
// into v1.2 batches. Each run of aider in the file, from one "# aider chat
// started at" line to the next, is a session.
package aider

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// Kind is the agent.kind of Aider sessions.
const Kind = "aider"

// Agent is the Aider adapter for the import runner.
var Agent = adapters.Agent{Kind: Kind, Discover: Discover, Parse: Parse,
	Layout: HistoryFile + " at the root of each repository Aider ran in"}

// HistoryFile is the name of Aider's chat history (its
// --chat-history-file default).
const HistoryFile = ".aider.chat.history.md"

// runHeader starts each run of aider in a history, followed by the local
// time it started, as YYYY-MM-DD HH:MM:SS.
const runHeader = "# aider chat started at "

// IsHistoryName reports whether a file name is that of a chat history:
// HistoryFile, or a name ending in it (a copy kept beside others).
func IsHistoryName(name string) bool { return strings.HasSuffix(name, HistoryFile) }

// IsHistory reports whether the file at path holds a chat history: its
// first line that is not blank starts a run. A history whose start was cut
// off does not, unless its name says what it is (IsHistoryName).
func IsHistory(path string) bool {
	f, err := adapters.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	lr := adapters.NewLines(io.LimitReader(f, 64<<10))
	for {
		_, line, _, err := lr.Next()
		switch {
		case err != nil:
			return false
		case strings.TrimSpace(string(line)) != "":
			return isRunHeader(line)
		}
	}
}

// Discover finds chat histories under roots (files named HistoryFile, or
// ending in it; a file named as a root is read whatever its name when it
// starts with a run, IsHistory) and gives one unit per run in each. A
// history holds many runs and only its last one grows, so each unit's
// stamp is its run's: the run's bytes and a number from their SHA-256.
// Lines before the first run (a history whose start was cut off) belong to
// no session and are reported.
func Discover(roots []string) ([]adapters.Unit, []adapters.Problem) {
	var units []adapters.Unit
	var problems []adapters.Problem
	skip := func(name string) bool {
		return name == ".git" || name == "node_modules" || strings.HasPrefix(name, ".aider.tags.cache")
	}
	seen := map[string]bool{} // a history under two roots is read once
	walked := adapters.Walk(roots, skip, func(p string, d fs.DirEntry, named bool) {
		if seen[p] || d.IsDir() || !d.Type().IsRegular() || !(IsHistoryName(d.Name()) || named && IsHistory(p)) {
			return
		}
		seen[p] = true
		us, probs := fileUnits(p)
		units = append(units, us...)
		problems = append(problems, probs...)
	})
	return units, append(walked, problems...)
}

// runScan is what Discover reads of one run.
type runScan struct {
	id     string
	offset int64 // of its header line in the file
	size   int64
	sum    hash.Hash
}

// fileUnits reads a history once and returns a unit for each of its runs,
// in file order.
func fileUnits(path string) ([]adapters.Unit, []adapters.Problem) {
	f, err := adapters.Open(path)
	if err != nil {
		return nil, []adapters.Problem{{Path: path, Message: err.Error()}}
	}
	defer f.Close()
	var runs []*runScan
	var problems []adapters.Problem
	ids := runIDs{path: path, seen: map[string]int{}}
	before, lastBefore := 0, 0 // lines with text before the first run
	lr := adapters.NewLines(f)
	var offset int64
	for {
		n, line, _, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		size := lr.Size()
		at := offset
		offset += int64(size)
		if err != nil && !errors.Is(err, adapters.ErrLineTooLong) {
			problems = append(problems, adapters.Problem{Path: path, Message: "read: " + err.Error()})
			break
		}
		if isRunHeader(line) {
			runs = append(runs, &runScan{id: ids.next(line), offset: at, sum: sha256.New()})
		}
		if len(runs) == 0 {
			if err != nil || strings.TrimSpace(string(line)) != "" {
				before, lastBefore = before+1, n
			}
			continue
		}
		r := runs[len(runs)-1]
		r.size += int64(size)
		if err != nil {
			fmt.Fprintf(r.sum, "\x00%d\x00", size) // a skipped line counts by its length
		} else {
			r.sum.Write(line)
			r.sum.Write([]byte{'\n'})
		}
	}
	if before > 0 {
		problems = append(problems, adapters.Problem{Path: path, Line: lastBefore,
			Message: fmt.Sprintf("lines 1-%d come before the first %q line (the history's start was cut off): not a run, skipped", lastBefore, strings.TrimSpace(runHeader))})
	}
	units := make([]adapters.Unit, 0, len(runs))
	for _, r := range runs {
		sum := r.sum.Sum(nil)
		units = append(units, adapters.Unit{ID: r.id, Paths: []string{path}, Offset: r.offset, Stamps: []store.ImportedFile{{
			Path: path + "#" + r.id, Size: r.size, ModTime: int64(binary.BigEndian.Uint64(sum) >> 1),
		}}})
	}
	return units, problems
}

// isRunHeader reports whether a line starts a run.
func isRunHeader(line []byte) bool { return bytes.HasPrefix(line, []byte(runHeader)) }

// runIDs names the runs of one history in file order. Aider writes no id:
// a run is named for the history's path, its header line (the second it
// started) and how many runs before it in the file have the same header,
// so a history that only grew names each run as before, and the same
// second in two repositories makes two sessions.
type runIDs struct {
	path string
	seen map[string]int
}

// next is the id of the run whose header is the next in the file.
func (r *runIDs) next(header []byte) string {
	h, k := r.count(header)
	return r.id(h, k)
}

// count notes the next header and returns it as named and its count.
func (r *runIDs) count(header []byte) (h string, k int) {
	h = strings.TrimRightFunc(string(header), unicode.IsSpace)
	k = r.seen[h]
	r.seen[h]++
	return h, k
}

// id is the id of the run whose header h is the kth of its text: its
// start time, when the header has one, and the hash.
func (r *runIDs) id(h string, k int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", r.path, h, k))
	if t, ok := startTime(h); ok {
		return "aider-" + t.At.Format(idTime) + "-" + hex.EncodeToString(sum[:6])
	}
	return "aider-" + hex.EncodeToString(sum[:6])
}

// idTime is the layout of the start time in a run's id.
const idTime = "20060102-150405"

// headerTime is how the header of the run named id ends: its start time
// as Aider writes it; "" when the id holds none.
func headerTime(id string) string {
	s, _ := strings.CutPrefix(id, "aider-")
	t, err := time.Parse(idTime, s[:min(len(idTime), len(s))])
	if err != nil {
		return ""
	}
	return t.Format(time.DateTime)
}

// startTime is the time in a run's header. Aider writes its local time
// without a zone, and the zone is known nowhere in the history: the time
// is taken as UTC, so a session of a user east or west of Greenwich starts
// that many hours off, but always at the same instant on every import.
func startTime(header string) (adapters.Time, bool) {
	s := strings.TrimSpace(strings.TrimPrefix(header, runHeader))
	at, err := time.ParseInLocation(time.DateTime, s, time.UTC)
	if err != nil {
		return adapters.Time{}, false
	}
	return adapters.TimeOf(at), true
}
