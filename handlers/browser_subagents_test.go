package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
)

// subagentSample is a real Claude Code session with two subagent files: a
// claude-code-guide subagent and the compaction summariser.
const subagentSample = "../adapters/claudecode/testdata/spotter"

// rawSubagent is what a subagent file holds, counted from its raw lines:
// a step per prompt, text, thinking and tool call; a failure per tool
// result marked as an error. Hook reminders the CLI injects are no steps.
type rawSubagent struct{ steps, failed int }

func countSubagentFile(t *testing.T, path string) rawSubagent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n rawSubagent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct {
			Type    string `json:"type"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || (r.Type != "user" && r.Type != "assistant") {
			continue
		}
		var text string
		if json.Unmarshal(r.Message.Content, &text) == nil {
			if !strings.HasPrefix(text, "<system-reminder>") { // injected by the CLI, not a message
				n.steps++
			}
			continue
		}
		var blocks []struct {
			Type    string `json:"type"`
			IsError bool   `json:"is_error"`
		}
		json.Unmarshal(r.Message.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text", "thinking", "tool_use":
				n.steps++
			case "tool_result":
				if b.IsError {
					n.failed++
				}
			}
		}
	}
	return n
}

// importSubagentSample imports the sample into the service's store and
// returns the session's detail.
func importSubagentSample(t *testing.T, s *testService) store.SessionDetail {
	t.Helper()
	ctx := context.Background()
	im := adapters.Importer{Store: s.store}
	if _, err := im.Run(ctx, claudecode.Agent, []string{subagentSample}); err != nil {
		t.Fatalf("import %s = %v", subagentSample, err)
	}
	const sid = "258c7280-ae70-4798-800f-63464d01a85d"
	d, err := s.store.Detail(ctx, sid, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v", sid, err)
	}
	return d
}

func TestBrowserSubagents(t *testing.T) {
	b := startBrowser(t)
	t.Run("NestedBlocks", func(t *testing.T) { browserSubagentBlocks(t, b) })
	t.Run("ActorFilter", func(t *testing.T) { browserActorFilter(t, b) })
	t.Run("StepLinkOpensBlock", func(t *testing.T) { browserSubagentStepLink(t, b) })
	t.Run("KeysOpenBlock", func(t *testing.T) { browserSubagentKeys(t, b) })
	t.Run("OpenBlockSurvivesUpdate", func(t *testing.T) { browserSubagentSurvivesUpdate(t, b) })
}

// browserSubagentBlocks: each subagent's steps are one block, collapsed,
// with the counts of its raw file, after the Task call that spawned it;
// the compaction summariser is named so.
func browserSubagentBlocks(t *testing.T, b *browser) {
	s := newTestService(t)
	d := importSubagentSample(t, s)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + d.ID + "&turns=all")

	files, _ := filepath.Glob(filepath.Join(subagentSample, d.ID, "subagents", "agent-*.jsonl"))
	if len(files) != 2 {
		t.Fatalf("sample has %d subagent files; want 2", len(files))
	}
	if n := p.Count(`details.subagent[data-actor-type="subagent"]`); n != len(files) {
		t.Fatalf("%d subagent blocks; want %d, one per subagent file", n, len(files))
	}
	if n := p.Count(`details.subagent[open]`); n != 0 {
		t.Errorf("%d subagent blocks open on arrival; want none", n)
	}
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl") // the actor id is the file's name
		want := countSubagentFile(t, f)
		block := `details.subagent[data-actor-id="` + id + `"]`
		if n := p.Count(block); n != 1 {
			t.Fatalf("%d blocks for subagent %s; want 1", n, id)
		}
		if got := p.Count(block + ` > details.step[data-actor-type="subagent"][data-actor-id="` + id + `"]`); got != want.steps {
			t.Errorf("subagent %s block holds %d steps; its file has %d", id, got, want.steps)
		}
		if got, w := p.Text(block+` [data-testid="subagent-steps"]`), fmt.Sprintf("%d steps", want.steps); got != w {
			t.Errorf("subagent %s block says %q; want %q", id, got, w)
		}
		if want.failed > 0 {
			if got, w := p.Text(block+` [data-testid="subagent-failed"]`), fmt.Sprintf("%d failed", want.failed); got != w {
				t.Errorf("subagent %s block says %q; want %q", id, got, w)
			}
		} else if n := p.Count(block + ` [data-testid="subagent-failed"]`); n != 0 {
			t.Errorf("subagent %s block shows failures; its file has none", id)
		}
		label := p.Text(block + ` [data-testid="subagent-label"]`)
		if strings.HasPrefix(id, "agent-acompact") {
			if label != "compaction summariser" {
				t.Errorf("compaction subagent labelled %q; want %q", label, "compaction summariser")
			}
			continue
		}
		if label == "" || label == "compaction summariser" {
			t.Errorf("subagent %s labelled %q; want its kind", id, label)
		}
		// The block follows the Task call that spawned it.
		var task int64
		var taskRaw string
		for _, st := range d.Steps {
			if st.Payload.ToolName == "Task" && strings.Contains(string(st.Payload.Raw), label) {
				task, taskRaw = st.Seq, string(st.Payload.Raw)
			}
		}
		prev := evalJS[string](p, `(function(){ let e = document.querySelector('`+block+`').previousElementSibling;
			while (e && !(e.matches('details.step'))) e = e.previousElementSibling;
			return e ? e.dataset.seq : ''; })()`)
		if task == 0 || prev != fmt.Sprint(task) {
			t.Errorf("subagent %s block follows step %q; want the Task call %d", id, prev, task)
		}
		if got := p.Text(block + ` [data-testid="subagent-task"]`); got == "" || !strings.Contains(taskRaw, `"description":"`+got+`"`) {
			t.Errorf("subagent %s block describes its task as %q; want the Task call's description", id, got)
		}
	}
	// The main agent's steps stay at the top level.
	if n := p.Count(`details.subagent details.step[data-actor-type="root"]`); n != 0 {
		t.Errorf("%d main-agent steps inside subagent blocks; want none", n)
	}
	root := 0
	for _, st := range d.Steps {
		if st.ActorID == adapters.RootActor {
			root++
		}
	}
	if n := p.Count(`section.turn > details.step[data-actor-type="root"]`); n != root {
		t.Errorf("%d main-agent steps at the top level; want %d", n, root)
	}
	p.Click("#expand-all")
	p.WaitFor("Expand all opens the blocks", `document.querySelectorAll('details.subagent:not([open])').length === 0`)
}

// browserActorFilter: the filter shows the main agent only, or one actor.
func browserActorFilter(t *testing.T, b *browser) {
	s := newTestService(t)
	d := importSubagentSample(t, s)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + d.ID + "&turns=all")
	visible := func(sel string) int {
		return evalJS[int](p, `Array.from(document.querySelectorAll('`+sel+`')).filter(e => e.offsetParent !== null || e.getClientRects().length > 0).length`)
	}
	all := p.Count(`details.step`)
	setFilter := func(v string) {
		evalJS[bool](p, `(s => { s.value = '`+v+`'; s.dispatchEvent(new Event('change', { bubbles: true })); return true; })(document.querySelector('#actor-filter'))`)
	}
	setFilter("root")
	if n := visible(`details.subagent`); n != 0 {
		t.Errorf("main agent only: %d subagent blocks visible; want 0", n)
	}
	if got, want := visible(`details.step`), p.Count(`section.turn > details.step[data-actor-type="root"]`); got != want {
		t.Errorf("main agent only: %d steps visible; want %d", got, want)
	}
	setFilter("agent-a881341")
	want := 0
	for _, st := range d.Steps {
		if st.ActorID == "agent-a881341" {
			want++
		}
	}
	if got := visible(`details.step`); got != want || want == 0 {
		t.Errorf("one actor: %d steps visible; want %d, the subagent's", got, want)
	}
	if got := visible(`details.step:not([data-actor-id="agent-a881341"])`); got != 0 {
		t.Errorf("one actor: %d other steps visible; want 0", got)
	}
	// The address keeps the actor chosen, and a reload shows it again.
	if got := evalJS[string](p, `new URLSearchParams(location.search).get('actor')`); got != "agent-a881341" {
		t.Errorf("one actor: the address's actor is %q; want agent-a881341", got)
	}
	evalJS[bool](p, `(window.notReloaded = true, location.reload(), true)`)
	p.WaitFor("reloaded", `window.notReloaded === undefined && document.readyState === 'complete'`)
	if got, sel := visible(`details.step`), evalJS[string](p, `document.querySelector('#actor-filter').value`); got != want || sel != "agent-a881341" {
		t.Errorf("one actor, reloaded: %d steps visible, Show %q; want %d and agent-a881341", got, sel, want)
	}
	setFilter("")
	p.Click("#expand-all")
	if got := visible(`details.step`); got != all {
		t.Errorf("every actor: %d steps visible; want %d", got, all)
	}
}

// browserSubagentStepLink: a #step-N link into a subagent opens its block.
func browserSubagentStepLink(t *testing.T, b *browser) {
	s := newTestService(t)
	d := importSubagentSample(t, s)
	var seq int64
	for _, st := range d.Steps {
		if st.ActorID == "agent-a881341" {
			seq = st.Seq
		}
	}
	if seq == 0 {
		t.Fatal("no step of subagent agent-a881341 stored")
	}
	p := b.newTab(t, serveBrowser(t, s))
	step := fmt.Sprintf("#step-%d", seq)
	p.Open("/session?id=" + d.ID + step)
	p.WaitFor("the linked step's block and step are open", `document.querySelector('`+step+`').open
		&& document.querySelector('`+step+`').closest('details.subagent').open`)
	if n := p.Count(`details.subagent[open]`); n != 1 {
		t.Errorf("%d blocks open; want only the linked step's", n)
	}
}

// browserSubagentKeys: j onto a step of a closed subagent block opens the
// block and shows the step; the other blocks stay closed.
func browserSubagentKeys(t *testing.T, b *browser) {
	s := newTestService(t)
	d := importSubagentSample(t, s)
	var first int64 = -1 // the first step of a subagent, and the steps before it
	before := 0
	for _, st := range d.Steps {
		if st.ActorID != d.Actors[0].ID && first < 0 {
			first = st.Seq
		}
		if first < 0 {
			before++
		}
	}
	if d.Actors[0].Type != "root" || first < 0 {
		t.Fatalf("the sample's first actor is %+v, its first subagent step %d; want the root and a subagent step", d.Actors[0], first)
	}
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + d.ID + "&turns=all")
	step := fmt.Sprintf("#step-%d", first)
	if p.Count(step) != 1 || p.Count(`details.subagent[open]`) != 0 {
		t.Fatalf("the page has %d of step %d and %d blocks open; want the step, in a closed block", p.Count(step), first, p.Count(`details.subagent[open]`))
	}
	for range before + 1 {
		p.key("j")
	}
	p.WaitFor("j selects the subagent's first step, its block open and the step on the screen",
		`document.querySelector('.kb-current') === document.querySelector('`+step+`')
		&& document.querySelector('`+step+`').closest('details.subagent').open
		&& document.querySelector('`+step+`').getBoundingClientRect().bottom <= innerHeight + 1
		&& document.querySelector('`+step+`').getBoundingClientRect().top >= -1`) // scrolled to an edge, within a pixel
	if n := p.Count(`details.subagent[open]`); n != 1 {
		t.Errorf("%d blocks open; want only the selected step's", n)
	}
}

// browserSubagentSurvivesUpdate: a live update of a turn keeps an opened
// subagent block open.
func browserSubagentSurvivesUpdate(t *testing.T, b *browser) {
	s := newTestService(t)
	sid := "sub-session"
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	x := sessionBatch(sid, "testagent", "1.0.0", at, "/tmp/ws", nil)
	x["actors"] = arr{obj{"id": sid + "-root", "type": "root"}, obj{"id": "helper", "parent_id": sid + "-root", "type": "subagent", "label": "Explore"}}
	x["turns"] = arr{turnRec(sid, 1, at, "")}
	x["steps"] = arr{
		stepRec(sid, 1, 1, at, "message", userPrompt("Look around")),
		stepRec(sid, 2, 1, at, "other", obj{"tool_name": "Task", "raw": obj{"subagent_type": "Explore"}}),
		withFields(stepRec(sid, 3, 1, at.Add(time.Second), "command", obj{"command": "ls", "stdout": "a"}), "actor_id", "helper"),
		stepRec(sid, 4, 1, at.Add(2*time.Second), "command", obj{"command": "make", "stdout": "running"}),
	}
	s.mustPush(x, http.StatusCreated)
	p := b.newTab(t, serveBrowser(t, s))
	p.Open("/session?id=" + sid)
	p.WaitFor("the pill says live", `document.querySelector('[data-testid="live-pill"]').textContent === 'live'`)
	if got := p.Text(`details.subagent[data-actor-id="helper"] [data-testid="subagent-label"]`); got != "Explore" {
		t.Errorf("block labelled %q; want Explore", got)
	}
	p.Click(`details.subagent[data-actor-id="helper"] > summary`)
	p.WaitFor("the block opens", `document.querySelector('details.subagent').open`)
	s.mustPush(laterPush(x, nil, arr{stepRec(sid, 4, 1, at.Add(2*time.Second), "command", obj{"command": "make", "stdout": "all passed"})}), http.StatusOK)
	p.WaitFor("the change to step 4 shows", `document.querySelector('#step-4 [data-testid="block-stdout"] pre').textContent === 'all passed'`)
	if !evalJS[bool](p, `document.querySelector('details.subagent[data-actor-id="helper"]').open`) {
		t.Fatal("the subagent block closed when its turn was redrawn; want it to stay open")
	}
}
