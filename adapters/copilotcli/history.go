package copilotcli

import (
	"cmp"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// history is a legacy session file (2025, history-session-state/<id>.json).
type history struct {
	SessionID string `json:"sessionId"`
	StartTime string `json:"startTime"`
	Timeline  []struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Text      string          `json:"text"`
		CallID    string          `json:"callId"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Result    struct {
			Type string `json:"type"`
			Log  string `json:"log"`
		} `json:"result"`
	} `json:"timeline"`
}

// parseHistory reads a legacy session: {sessionId, startTime,
// chatMessages, timeline}. Only the timeline is read (chatMessages repeats
// it as API messages): user entries start turns, copilot entries are
// replies, info entries are skipped, and each tool_call_completed is a
// finished call mapped like an event log's (tools.go); its result type
// "success" is ok, any other failed (or rejected, when it says so). The
// file records no version, workspace or mode; the workspace is the folder
// the first command changes to (`cd <folder> && ...`), else unknown.
func parseHistory(b *adapters.Builder, f adapters.File) {
	body, err := adapters.ReadDocument(f.Body)
	if err != nil {
		b.Problem(adapters.Problem{Path: f.Path, Message: err.Error()})
		return
	}
	var h history
	if err := json.Unmarshal(body, &h); err != nil {
		b.Problem(adapters.Problem{Path: f.Path, Message: "not a Copilot CLI session: " + err.Error()})
		return
	}
	if h.SessionID != "" && store.PlainID(h.SessionID) {
		b.Header.ID = h.SessionID
	}
	if t, ok := adapters.ParseTime(h.StartTime); ok {
		b.SetStart(t)
	}
	s := b.Stream(f.Path)
	var cwds []string
	for i, e := range h.Timeline {
		at, _ := adapters.ParseTime(e.Timestamp)
		b.Observe(at)
		id := cmp.Or(e.ID, f.Path+"#"+strconv.Itoa(i))
		switch e.Type {
		case "user":
			b.NewTurn(id, "", at)
			s.Message(nil, id, "user", e.Text, at)
		case "copilot":
			if strings.TrimSpace(e.Text) != "" {
				s.Message(nil, id, "assistant", e.Text, at)
			}
		case "tool_call_completed":
			callID := cmp.Or(e.CallID, id)
			if b.Called(callID) {
				b.Skip("repeated call")
				continue
			}
			st := s.Add(nil, toolStep(callID, e.Name, e.Arguments, ""), at)
			ok := e.Result.Type == "success"
			errText := ""
			if !ok {
				errText = cmp.Or(strings.TrimSpace(e.Result.Log), e.Result.Type)
			}
			raw, _ := json.Marshal(e.Result)
			decision := adapters.DecisionUnknown
			if !ok && refused(e.Result.Type, errText) {
				decision = adapters.DecisionRejected
			}
			complete(st.St, decision, ok, e.Result.Log, errText, raw)
			if st.St.Type == store.TypeCommand {
				if c := bashCwd(*st.St.Payload.Command); c != "" {
					cwds = append(cwds, c)
				}
			}
		default:
			b.Skip(cmp.Or(e.Type, "untyped entry"))
		}
	}
	if b.Header.Workspace.Root == "" && len(cwds) > 0 {
		b.Header.Workspace.Root = cwds[0]
	}
}

var cdRE = regexp.MustCompile(`^cd\s+(/[^\s;&|]*)\s*&&`)

// bashCwd is the folder a command starts by changing to, "" when none.
func bashCwd(command string) string {
	if m := cdRE.FindStringSubmatch(strings.TrimSpace(command)); m != nil {
		return m[1]
	}
	return ""
}
