// Package storetest builds realistic v1.2 batches for benchmarks and load:
// a mix of the five step types with command output, edits, prompts and
// replies, failures, flags and reference-only steps.
package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentreview/service/store"
)

// Batch is push number push of a session, each push carrying n steps:
// seq push*n+1 .. push*n+n, a turn for every 20 steps, and on the first
// push the segment and both actors. Contents are pseudo-random but the
// same for the same (push, n): a mix of the five step types with command
// output of a few hundred bytes to 4 KB, edits of code, prompts and
// replies, failures with errors and flags, and some reference-only steps.
func Batch(sid string, push, n int) *store.Batch {
	const stepsPerTurn = 20
	r := rand.New(rand.NewPCG(uint64(push), uint64(n)))
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	ts := func(seq int) string {
		return start.Add(time.Duration(seq) * 1700 * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
	}
	b := &store.Batch{
		SchemaVersion: store.SchemaVersion,
		Session: store.SessionHeader{
			ID:        sid,
			Agent:     store.Agent{Kind: "claude-code", Version: "2.1.14", FormatVersion: "1"},
			Workspace: store.Workspace{Root: "/home/dev/src/widget", Repo: "github.com/acme/widget"},
			StartedAt: ts(0),
			Metrics: &store.Metrics{CostUSD: 0.0123 * float64(push*n+n), APIRequests: int64(push*n/4 + 1),
				Tokens: store.Tokens{Input: int64(1200 * (push + 1)), Output: int64(800 * (push + 1)), CacheRead: 40000, CacheCreation: 5200}},
		},
	}
	const root, sub = "agent-root", "agent-task-1"
	if push == 0 {
		b.Segments = []store.Segment{{Index: 0, StartReason: "start", StartedAt: ts(0),
			SourceFiles: []string{"/home/dev/.claude/projects/-home-dev-src-widget/" + sid + ".jsonl"}}}
		b.Actors = []store.Actor{{ID: root, Type: "root", Label: "main"}, {ID: sub, ParentID: root, Type: "subagent", Label: "Task: explore tests"}}
	}
	var turn store.Turn
	for i := range n {
		seq := push*n + i + 1
		if i%stepsPerTurn == 0 {
			actor := root
			if r.IntN(10) == 0 {
				actor = sub
			}
			turn = store.Turn{ID: genUUID(r), SessionID: sid, SegmentIndex: 0, ActorID: actor,
				Index: int64(seq/stepsPerTurn + 1), PromptID: genUUID(r), StartedAt: ts(seq), StepIDs: []string{}}
			if r.IntN(4) == 0 {
				turn.Mode = "plan"
			}
			b.Turns = append(b.Turns, turn)
		}
		st := store.Step{ID: "toolu_" + genToken(r, 24), SessionID: sid, SegmentIndex: 0, TurnID: turn.ID,
			ActorID: turn.ActorID, Seq: int64(seq), At: ts(seq), Decision: "accepted", Outcome: "ok",
			ContentStatus: store.ContentInline, Channels: []string{"hook"}, Flags: []store.Flag{}}
		if r.IntN(3) == 0 {
			st.Channels = append(st.Channels, "otel")
		}
		p := &st.Payload
		switch k := r.IntN(100); {
		case i%stepsPerTurn == 0: // each turn opens with the user's prompt
			st.Type, st.Decision, st.ID = store.TypeMessage, "n/a", "msg_"+genToken(r, 24)
			p.Role, p.Text = "user", genPtr(genProse(r, 80+r.IntN(600)))
		case k < 30:
			st.Type = store.TypeCommand
			p.Command = genPtr(genCommand(r))
			p.Cwd = genPtr("/home/dev/src/widget")
			switch {
			case r.IntN(20) == 0:
				st.ContentStatus, p.Command, p.Cwd = store.ContentReferenceOnly, nil, nil
				p.OutputRef = genPtr("otel:tool_result/" + genUUID(r))
			case r.IntN(8) == 0:
				st.Outcome = "failed"
				p.ExitCode = genPtr(int64(1 + r.IntN(2)))
				p.Stdout = genPtr(genLines(r, 200+r.IntN(1500), genOutputLine))
				p.Stderr = genPtr(genLines(r, 100+r.IntN(800), genErrorLine))
				st.Error = &store.StepError{Type: "tool_error", Message: "Command failed with exit code 1"}
				st.Flags = append(st.Flags, store.Flag{Kind: "failed", Severity: "warn", Reason: "exit code 1"})
			default:
				p.Stdout = genPtr(genLines(r, 300+r.IntN(3000), genOutputLine))
				p.ExitCode = genPtr(int64(0))
			}
			if r.IntN(50) == 0 {
				st.Flags = append(st.Flags, store.Flag{Kind: "dangerous_command", Severity: "danger", Reason: "removes files recursively"})
			}
		case k < 50:
			st.Type = store.TypeEdit
			p.Path = genPath(r)
			full := r.IntN(10) == 0
			p.IsFullWrite = &full
			if full {
				p.NewString = genPtr(genLines(r, 600+r.IntN(2400), genCodeLine))
			} else {
				old := genLines(r, 80+r.IntN(700), genCodeLine)
				p.OldString = genPtr(old)
				p.NewString = genPtr(old + genLines(r, 40+r.IntN(300), genCodeLine))
			}
			if r.IntN(3) == 0 {
				p.StructuredPatch = json.RawMessage(fmt.Sprintf(
					`[{"oldStart":%d,"oldLines":4,"newStart":%d,"newLines":6,"lines":[" \tif err != nil {","-\t\treturn err","+\t\treturn fmt.Errorf(\"parse: %%w\", err)"," \t}"]}]`,
					10+r.IntN(300), 10+r.IntN(300)))
			}
			if r.IntN(30) == 0 {
				st.Decision, st.Outcome = "rejected", "failed"
				st.Flags = append(st.Flags, store.Flag{Kind: "rejected", Severity: "info", Reason: "the user rejected the edit"})
			}
		case k < 68:
			st.Type = store.TypeRead
			p.Path = genPath(r)
			if r.IntN(10) < 7 {
				from := int64(1 + r.IntN(400))
				p.Range = &[2]int64{from, from + int64(20+r.IntN(200))}
			}
		case k < 90:
			st.Type, st.Decision, st.ID = store.TypeMessage, "n/a", "msg_"+genToken(r, 24)
			p.Role = "assistant"
			if r.IntN(6) == 0 {
				p.Role = "thinking"
			}
			if r.IntN(30) == 0 {
				st.ContentStatus = store.ContentReferenceOnly
				p.TextRef = genPtr("otel:api_response/" + genUUID(r))
			} else {
				p.Text = genPtr(genProse(r, 60+r.IntN(1500)))
			}
		default:
			st.Type = store.TypeOther
			tools := []string{"Grep", "Glob", "WebFetch", "TodoWrite", "Task"}
			p.ToolName = tools[r.IntN(len(tools))]
			p.Raw = json.RawMessage(fmt.Sprintf(`{"pattern":%q,"path":"/home/dev/src/widget","output_mode":"content","-n":true,"head_limit":%d}`,
				genWords(r, 2+r.IntN(3)), 20+r.IntN(100)))
		}
		b.Steps = append(b.Steps, st)
	}
	return b
}

func genPtr[T any](v T) *T { return &v }

func genUUID(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Uint64()&(1<<48-1))
}

func genToken(r *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

var (
	genVocab = strings.Fields(`the a to of and in is it that for this test file function error value
		return we should can I will need let me check now run build fix update change add remove config
		handler store session step batch parse json request response timeout context query index row
		table column cache token output input path module package import type struct field method
		because so then first next also instead here there which when if not but with from by on`)
	genIdents = strings.Fields(`ctx err req resp conn stmt batch step session cfg buf opts id name
		count total items result parser store handler writer reader token path line col`)
	genPkgs = strings.Fields(`internal/parser internal/store cmd/widget api/v1 pkg/render internal/auth
		internal/queue web/static pkg/config internal/metrics`)
)

func genWords(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = genVocab[r.IntN(len(genVocab))]
	}
	return strings.Join(w, " ")
}

func genProse(r *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		s := genWords(r, 6+r.IntN(14))
		b.WriteString(strings.ToUpper(s[:1]) + s[1:] + ". ")
		if r.IntN(5) == 0 {
			fmt.Fprintf(&b, "See `%s.%s` in %s.\n\n", genIdents[r.IntN(len(genIdents))], genIdents[r.IntN(len(genIdents))], genPath(r))
		}
	}
	return b.String()
}

func genPath(r *rand.Rand) string {
	return fmt.Sprintf("/home/dev/src/widget/%s/%s.go", genPkgs[r.IntN(len(genPkgs))], genIdents[r.IntN(len(genIdents))])
}

func genCommand(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return "go test ./" + genPkgs[r.IntN(len(genPkgs))] + "/... -run Test" + strings.ToUpper(genIdents[r.IntN(len(genIdents))][:1]) + genIdents[r.IntN(len(genIdents))][1:]
	case 1:
		return "git diff --stat HEAD~1 && git status --short"
	case 2:
		return "rg -n '" + genIdents[r.IntN(len(genIdents))] + "' --type go " + genPkgs[r.IntN(len(genPkgs))]
	case 3:
		return "ls -la " + genPkgs[r.IntN(len(genPkgs))]
	case 4:
		return "go build ./... && go vet ./..."
	}
	return "npm run lint -- --fix web/static"
}

func genLines(r *rand.Rand, size int, line func(*rand.Rand) string) string {
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(line(r))
		b.WriteByte('\n')
	}
	return b.String()
}

func genOutputLine(r *rand.Rand) string {
	id := genIdents[r.IntN(len(genIdents))]
	switch r.IntN(6) {
	case 0:
		return fmt.Sprintf("ok  \tgithub.com/acme/widget/%s\t%.3fs", genPkgs[r.IntN(len(genPkgs))], r.Float64()*3)
	case 1:
		return fmt.Sprintf("=== RUN   Test%s/%s_%d", strings.ToUpper(id[:1])+id[1:], genIdents[r.IntN(len(genIdents))], r.IntN(40))
	case 2:
		return fmt.Sprintf("--- PASS: Test%s (%.2fs)", strings.ToUpper(id[:1])+id[1:], r.Float64())
	case 3:
		return fmt.Sprintf("-rw-r--r--  1 dev dev %6d Jan  2 10:%02d %s.go", r.IntN(40000), r.IntN(60), id)
	case 4:
		return fmt.Sprintf("%s:%d:%d: %s", genPath(r), 1+r.IntN(900), 1+r.IntN(80), genWords(r, 5+r.IntN(6)))
	}
	return fmt.Sprintf(" %s | %3d %s", genPath(r), r.IntN(120), strings.Repeat("+", 1+r.IntN(30)))
}

func genErrorLine(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return fmt.Sprintf("--- FAIL: Test%d (0.%02ds)", r.IntN(1000), r.IntN(100))
	}
	return fmt.Sprintf("%s:%d:%d: undefined: %s", genPath(r), 1+r.IntN(900), 1+r.IntN(80), genIdents[r.IntN(len(genIdents))])
}

func genCodeLine(r *rand.Rand) string {
	a, c := genIdents[r.IntN(len(genIdents))], genIdents[r.IntN(len(genIdents))]
	switch r.IntN(7) {
	case 0:
		return fmt.Sprintf("func (s *%s) %s(ctx context.Context, %s string) error {", strings.ToUpper(a[:1])+a[1:], strings.ToUpper(c[:1])+c[1:], a)
	case 1:
		return fmt.Sprintf("\tif err := %s.%s(ctx); err != nil {", a, strings.ToUpper(c[:1])+c[1:])
	case 2:
		return fmt.Sprintf("\t\treturn fmt.Errorf(\"%s %s: %%w\", err)", a, c)
	case 3:
		return "\t}"
	case 4:
		return fmt.Sprintf("\t%s := make([]%s, 0, len(%s))", a, "string", c)
	case 5:
		return fmt.Sprintf("\t// %s", genWords(r, 4+r.IntN(8)))
	}
	return fmt.Sprintf("\tfor _, %s := range %s.%s {", a, c, "items")
}
