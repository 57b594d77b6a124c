package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/cline"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/store"
)

// mustImportImageSample imports the image variant of a real Claude Code
// sample and returns it with its stored detail.
func mustImportImageSample(t *testing.T, s *store.Store) (adapterstest.ImageSample, store.SessionDetail) {
	t.Helper()
	sample := adapterstest.MustImageSample(t, "../"+adapterstest.ImageSampleSource)
	im := adapters.Importer{Store: s}
	if _, err := im.Run(context.Background(), claudecode.Agent, []string{sample.Path}); err != nil {
		t.Fatalf("import %s = %v", sample.Path, err)
	}
	d, err := s.Detail(context.Background(), sample.SessionID, store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(%s) = %v", sample.SessionID, err)
	}
	return sample, d
}

// TestImageOfImportedSteps: the pasted image and the image a Read call
// returned are each stored once, on their own step, and read back as the
// PNG bytes the transcript carried.
func TestImageOfImportedSteps(t *testing.T) {
	s := mustOpen(t)
	sample, d := mustImportImageSample(t, s)
	want := map[string][]byte{sample.ReadID: sample.Read}
	seqs := map[string]int64{}
	for _, st := range d.Steps {
		refs := store.FindImages(st.Payload.Raw)
		switch {
		case st.ID == sample.ReadID:
		case strings.HasSuffix(st.ID, "#images"):
			want[st.ID] = sample.Prompt
		default:
			if len(refs) > 0 {
				t.Errorf("step %d (%s) holds %d images; want none", st.Seq, st.ID, len(refs))
			}
			continue
		}
		seqs[st.ID] = st.Seq
		if len(refs) != 1 {
			t.Errorf("step %d (%s) holds %d images; want 1", st.Seq, st.ID, len(refs))
		}
		if n := bytes.Count(st.Payload.Raw, []byte(base64.StdEncoding.EncodeToString(want[st.ID])[:40])); n != 1 {
			t.Errorf("step %d (%s) raw holds its image %d times; want once", st.Seq, st.ID, n)
		}
	}
	if len(seqs) != 2 {
		t.Fatalf("steps with images = %v; want the Read call and the pasted images", seqs)
	}
	for id, seq := range seqs {
		img, err := s.Image(context.Background(), d.ID, seq, 1)
		if err != nil {
			t.Fatalf("Image(%d, 1) = %v", seq, err)
		}
		if !bytes.Equal(img.Data, want[id]) || img.MediaType != "image/png" {
			t.Errorf("Image(%d, 1) = %s, %d bytes; want the %d bytes of the PNG in the sample", seq, img.MediaType, len(img.Data), len(want[id]))
		}
		if got := store.FormatStamp(img.Stamp); got != d.UpdatedAt {
			t.Errorf("Image(%d, 1).Stamp = %s; want the session's %s", seq, got, d.UpdatedAt)
		}
		if _, err := s.Image(context.Background(), d.ID, seq, 2); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Image(%d, 2) = %v; want ErrNotFound", seq, err)
		}
	}
}

// TestImageRefused: what is not a served image is refused, by kind.
func TestImageRefused(t *testing.T) {
	s := mustOpen(t)
	png := adapterstest.MustPNG(t, 4, 4)
	raws := []string{
		`{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString([]byte("<svg onload=alert(1)>not an image at all</svg>")) + `"}}]}`,
		`{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%%%not base64%%%"}}]}`,
		`{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", store.MaxImageBytes/3*4+8) + `"}}]}`,
		`{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(png) + `"}`,
	}
	b := newBatch("refused")
	steps := arr{}
	for i, raw := range raws {
		st := step("refused", i, "other")
		st["payload"] = obj{"tool_name": "screenshot", "raw": json.RawMessage(raw)}
		steps = append(steps, st)
	}
	b["steps"] = steps
	if _, err := s.Apply(context.Background(), mustParse(t, b)); err != nil {
		t.Fatalf("Apply = %v", err)
	}
	for seq := range int64(3) {
		if _, err := s.Image(context.Background(), "refused", seq, 1); !errors.Is(err, store.ErrNotImage) {
			t.Errorf("Image(step %d) = %v; want ErrNotImage", seq, err)
		}
	}
	if img, err := s.Image(context.Background(), "refused", 3, 1); err != nil || !bytes.Equal(img.Data, png) {
		t.Errorf("Image(data: URI) = %d bytes, %v; want the PNG", len(img.Data), err)
	}
	for _, q := range []struct {
		id       string
		seq      int64
		n        int
		wantKind error
	}{{"refused", 9, 1, store.ErrNotFound}, {"refused", 3, 0, store.ErrNotFound}, {"missing", 0, 1, store.ErrNotFound}} {
		if _, err := s.Image(context.Background(), q.id, q.seq, q.n); !errors.Is(err, q.wantKind) {
			t.Errorf("Image(%s, %d, %d) = %v; want %v", q.id, q.seq, q.n, err, q.wantKind)
		}
	}
}

// TestElideImages: the raw shown keeps everything but the images' text.
func TestElideImages(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	raw := json.RawMessage(`{"input":{"file_path":"/a.png"},"result":{"type":"image","file":{"base64":"` + png + `","type":"image/png"}},"z":"data:image/gif;base64,R0lG"}`)
	got := store.ElideImages(raw, func(n int, r store.ImageRef) string { return "[" + r.MediaType + "]" })
	want := `{"input":{"file_path":"/a.png"},"result":{"type":"image","file":{"base64":"[image/png]","type":"image/png"}},"z":"[image/gif]"}`
	if string(got) != want {
		t.Errorf("ElideImages = %s; want %s", got, want)
	}
}

// TestImageOfCodexPrompt: the images of a Codex user_message (data: URIs)
// are stored once, beside the prompt, and read back as the PNG given.
func TestImageOfCodexPrompt(t *testing.T) {
	const src = "../../shared/samples/codex/agentlogs_crud_rollout.jsonl"
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	png := adapterstest.MustPNG(t, 20, 10)
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	prompts := bytes.Count(body, []byte(`"type":"user_message"`))
	derived := bytes.Replace(body, []byte(`"images":[]`), []byte(`"images":["`+uri+`"]`), 1)
	if prompts == 0 || bytes.Equal(derived, body) {
		t.Fatalf("sample %s has no user_message with images to fill", src)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, derived, 0o600); err != nil {
		t.Fatal(err)
	}
	s, d := importOne(t, codex.Agent, path)
	var with []store.Step
	for _, st := range d.Steps {
		if n := bytes.Count(st.Payload.Raw, []byte(uri[30:90])); n > 0 {
			with = append(with, st)
		}
	}
	if len(with) != 1 || !strings.HasSuffix(with[0].ID, "#images") || with[0].Seq == 0 {
		t.Fatalf("steps holding the image = %d; want one, beside the prompt", len(with))
	}
	var prompt store.Step
	for _, st := range d.Steps {
		if st.Seq == with[0].Seq-1 {
			prompt = st
		}
	}
	if prompt.Type != store.TypeMessage || prompt.Payload.Role != "user" || prompt.TurnID != with[0].TurnID {
		t.Errorf("step before the image = %s %s; want the prompt of its turn", prompt.Type, prompt.Payload.Role)
	}
	img, err := s.Image(context.Background(), d.ID, with[0].Seq, 1)
	if err != nil || !bytes.Equal(img.Data, png) {
		t.Errorf("Image = %d bytes, %v; want the PNG given", len(img.Data), err)
	}
}

// TestImageOfOpencodePrompt: an image attached to an opencode prompt (a
// file part holding a data: URI) is stored once, beside the prompt.
func TestImageOfOpencodePrompt(t *testing.T) {
	const src = "../../shared/samples/opencode/agentlogs_crud_export.json"
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var export map[string]any
	if err := json.Unmarshal(body, &export); err != nil {
		t.Fatal(err)
	}
	png := adapterstest.MustPNG(t, 12, 8)
	uri := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	var promptID string
	for _, m := range export["messages"].([]any) {
		m := m.(map[string]any)
		info := m["info"].(map[string]any)
		if info["role"] != "user" || promptID != "" {
			continue
		}
		promptID = info["id"].(string)
		m["parts"] = append(m["parts"].([]any), map[string]any{"id": "prt_image", "sessionID": info["sessionID"], "messageID": promptID,
			"type": "file", "mime": "image/png", "filename": "shot.png", "url": uri})
	}
	derived, _ := json.Marshal(export)
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, derived, 0o600); err != nil {
		t.Fatal(err)
	}
	s, d := importOne(t, opencode.Agent, path)
	var with []store.Step
	for _, st := range d.Steps {
		if bytes.Contains(st.Payload.Raw, []byte(uri[30:90])) {
			with = append(with, st)
		}
	}
	if len(with) != 1 || !strings.HasSuffix(with[0].ID, "#images") {
		t.Fatalf("steps holding the image = %d; want one, beside the prompt", len(with))
	}
	img, err := s.Image(context.Background(), d.ID, with[0].Seq, 1)
	if err != nil || !bytes.Equal(img.Data, png) {
		t.Errorf("Image = %d bytes, %v; want the PNG attached", len(img.Data), err)
	}
}

// TestImageOfClinePrompt: an image block in the user message that holds a
// Cline task's prompt is stored once, beside the prompt.
func TestImageOfClinePrompt(t *testing.T) {
	const src = "../../shared/samples/cline/tasks/1770913324799"
	dir := filepath.Join(t.TempDir(), "tasks", filepath.Base(src))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png := adapterstest.MustPNG(t, 16, 9)
	data := base64.StdEncoding.EncodeToString(png)
	for _, name := range []string{"api_conversation_history.json", "task_metadata.json"} {
		body, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "api_conversation_history.json" {
			var history []map[string]any
			if err := json.Unmarshal(body, &history); err != nil || history[0]["role"] != "user" {
				t.Fatalf("sample history: %v; want a user message first", err)
			}
			history[0]["content"] = append(history[0]["content"].([]any), map[string]any{"type": "image",
				"source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}})
			body, _ = json.Marshal(history)
		}
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, d := importOne(t, cline.Agent, dir)
	var with []store.Step
	for _, st := range d.Steps {
		if bytes.Contains(st.Payload.Raw, []byte(data[20:80])) {
			with = append(with, st)
		}
	}
	if len(with) != 1 || !strings.HasSuffix(with[0].ID, "#images") {
		t.Fatalf("steps holding the image = %d; want one, beside the prompt", len(with))
	}
	img, err := s.Image(context.Background(), d.ID, with[0].Seq, 1)
	if err != nil || !bytes.Equal(img.Data, png) {
		t.Errorf("Image = %d bytes, %v; want the PNG given", len(img.Data), err)
	}
}

// TestImageOfGeminiRead: a Gemini CLI read_file whose result is an image
// (an inlineData part beside the functionResponse) keeps it on its step.
func TestImageOfGeminiRead(t *testing.T) {
	const src = "../../shared/samples/gemini/vibecodingtracker/tmp/ab14fe397f91d5f283525b3178d2314aef552f761131c42172a21b7bf735e73d/chats/test_conversation_gemini.json"
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var chat map[string]any
	if err := json.Unmarshal(body, &chat); err != nil {
		t.Fatal(err)
	}
	png := adapterstest.MustPNG(t, 30, 20)
	data := base64.StdEncoding.EncodeToString(png)
	callID := ""
	for _, m := range chat["messages"].([]any) {
		calls, _ := m.(map[string]any)["toolCalls"].([]any)
		for _, c := range calls {
			c := c.(map[string]any)
			if c["name"] != "read_file" || callID != "" {
				continue
			}
			callID = c["id"].(string)
			c["args"] = map[string]any{"file_path": "/tmp/shot.png"}
			c["result"] = []any{
				map[string]any{"functionResponse": map[string]any{"id": callID, "name": "read_file", "response": map[string]any{"output": "Binary content provided (1 item(s))."}}},
				map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": data}},
			}
		}
	}
	if callID == "" {
		t.Fatalf("sample %s has no read_file call", src)
	}
	derived, _ := json.Marshal(chat)
	rel, _ := filepath.Rel("../../shared/samples/gemini/vibecodingtracker", src)
	path := filepath.Join(t.TempDir(), rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, derived, 0o600); err != nil {
		t.Fatal(err)
	}
	s, d := importOne(t, geminicli.Agent, path)
	var with []store.Step
	for _, st := range d.Steps {
		if n := bytes.Count(st.Payload.Raw, []byte(data[20:80])); n > 0 {
			with = append(with, st)
			if n != 1 {
				t.Errorf("step %d holds the image %d times; want once", st.Seq, n)
			}
		}
	}
	if len(with) != 1 || with[0].Payload.ToolName != "read_file" {
		t.Fatalf("steps holding the image = %d; want the read_file call", len(with))
	}
	img, err := s.Image(context.Background(), d.ID, with[0].Seq, 1)
	if err != nil || !bytes.Equal(img.Data, png) {
		t.Errorf("Image = %d bytes, %v; want the PNG read", len(img.Data), err)
	}
}

// TestImageOfClaudeToolResults: a tool result's image blocks are kept
// once whether or not toolUseResult repeats them (an MCP screenshot's
// toolUseResult is its content; a result without one keeps the blocks in
// raw.images).
func TestImageOfClaudeToolResults(t *testing.T) {
	src := "../" + adapterstest.ImageSampleSource
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	png := adapterstest.MustPNG(t, 8, 8)
	data := base64.StdEncoding.EncodeToString(png)
	image := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}}
	var out []byte
	results := 0
	for line := range bytes.Lines(body) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		msg, _ := rec["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			b := b.(map[string]any)
			tur, _ := rec["toolUseResult"].(map[string]any)
			if _, todo := tur["newTodos"]; b["type"] != "tool_result" || !todo || results >= 2 {
				continue // TodoWrite's results: other steps, which keep their result
			}
			content := []any{map[string]any{"type": "text", "text": "screenshot"}, image}
			b["content"] = content
			if results == 0 {
				rec["toolUseResult"] = content // as for an MCP tool
			} else {
				delete(rec, "toolUseResult")
			}
			results++
		}
		l, _ := json.Marshal(rec)
		out = append(append(out, l...), '\n')
	}
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	s, d := importOne(t, claudecode.Agent, path)
	var with []int64
	for _, st := range d.Steps {
		if n := strings.Count(string(st.Payload.Raw), data); n > 0 {
			with = append(with, st.Seq)
			if n != 1 {
				t.Errorf("step %d holds the image %d times; want once", st.Seq, n)
			}
			if img, err := s.Image(context.Background(), d.ID, st.Seq, 1); err != nil || !bytes.Equal(img.Data, png) {
				t.Errorf("Image(step %d) = %d bytes, %v; want the PNG", st.Seq, len(img.Data), err)
			}
		}
	}
	if len(with) != 2 {
		t.Errorf("steps holding the image = %v; want the two tool calls", with)
	}
}

// importOne imports path with agent into a new store and returns the store
// and the one session it holds.
func importOne(t *testing.T, agent adapters.Agent, path string) (*store.Store, store.SessionDetail) {
	t.Helper()
	s := mustOpen(t)
	if _, err := (&adapters.Importer{Store: s}).Run(context.Background(), agent, []string{path}); err != nil {
		t.Fatalf("import = %v", err)
	}
	l, err := s.List(context.Background(), store.ListQuery{})
	if err != nil || len(l.Sessions) != 1 {
		t.Fatalf("List = %d sessions, %v; want 1", len(l.Sessions), err)
	}
	d, err := s.Detail(context.Background(), l.Sessions[0].ID, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}
