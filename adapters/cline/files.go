package cline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentreview/service/adapters"
)

// apiMessage is one element of api_conversation_history.json, or of the
// messages of an SDK messages file: an Anthropic-style message plus what
// Cline adds (model, metrics, time, id).
type apiMessage struct {
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	TS        *float64        `json:"ts"`
	ModelInfo struct {
		ModelID string `json:"modelId"`
		ID      string `json:"id"`
		Mode    string `json:"mode"`
	} `json:"modelInfo"`
	Metrics struct {
		// api_conversation_history.json (Cline 3.5x)
		Tokens *struct {
			Prompt     int64 `json:"prompt"`
			Completion int64 `json:"completion"`
			Cached     int64 `json:"cached"`
		} `json:"tokens"`
		Cost *float64 `json:"cost"`
		// SDK messages files (Cline 4)
		InputTokens      *int64 `json:"inputTokens"`
		OutputTokens     *int64 `json:"outputTokens"`
		CacheReadTokens  *int64 `json:"cacheReadTokens"`
		CacheWriteTokens *int64 `json:"cacheWriteTokens"`
	} `json:"metrics"`
}

// messagesFile is an SDK <id>.messages.json file.
type messagesFile struct {
	Agent     string            `json:"agent"`
	SessionID string            `json:"sessionId"`
	Messages  []json.RawMessage `json:"messages"`
}

// manifest is an SDK <id>.json session manifest.
type manifest struct {
	SessionID     string `json:"session_id"`
	StartedAt     string `json:"started_at"`
	EndedAt       string `json:"ended_at"`
	Cwd           string `json:"cwd"`
	WorkspaceRoot string `json:"workspace_root"`
}

// uiMessage is one element of ui_messages.json (ClineMessage).
type uiMessage struct {
	TS        *float64 `json:"ts"`
	Type      string   `json:"type"`
	Ask       string   `json:"ask"`
	Say       string   `json:"say"`
	Text      string   `json:"text"`
	ModelInfo struct {
		Mode string `json:"mode"`
	} `json:"modelInfo"`
}

// apiRequest is the JSON text of a say:"api_req_started" message.
type apiRequest struct {
	TokensIn    int64    `json:"tokensIn"`
	TokensOut   int64    `json:"tokensOut"`
	CacheWrites int64    `json:"cacheWrites"`
	CacheReads  int64    `json:"cacheReads"`
	Cost        *float64 `json:"cost"`
	APIProtocol string   `json:"apiProtocol"`
}

// taskMetadata is task_metadata.json.
type taskMetadata struct {
	FilesInContext []struct {
		Path          string   `json:"path"`
		ClineReadDate *float64 `json:"cline_read_date"`
		ClineEditDate *float64 `json:"cline_edit_date"`
	} `json:"files_in_context"`
	ModelUsage []struct {
		TS      *float64 `json:"ts"`
		Mode    string   `json:"mode"`
		ModelID string   `json:"model_id"`
	} `json:"model_usage"`
	EnvironmentHistory []struct {
		TS           *float64 `json:"ts"`
		ClineVersion string   `json:"cline_version"`
		HostName     string   `json:"host_name"`
		HostVersion  string   `json:"host_version"`
	} `json:"environment_history"`
}

// decodeFile reads a whole JSON file into v, counting its bytes read
// (Builder.Read). A file that is not valid JSON is reported with the line
// of the first error.
func (p *parser) decodeFile(f adapters.File, v any) *adapters.Problem {
	b, err := adapters.ReadDocument(f.Body)
	if err != nil {
		return &adapters.Problem{Path: f.Path, Message: err.Error()}
	}
	p.b.Read(len(b))
	if len(bytes.TrimSpace(b)) == 0 {
		return &adapters.Problem{Path: f.Path, Message: "empty file"}
	}
	err = json.Unmarshal(b, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		line := 1 + bytes.Count(b[:min(int(syn.Offset), len(b))], []byte("\n"))
		return &adapters.Problem{Path: f.Path, Line: line, Message: "invalid JSON: " + syn.Error()}
	case errors.As(err, &typ) && typ.Field == "":
		return &adapters.Problem{Path: f.Path, Message: fmt.Sprintf("expected a JSON %s, got %s", shapeOf(v), typ.Value)}
	case errors.As(err, &typ):
		return nil // a field of an odd type is left empty
	default:
		return &adapters.Problem{Path: f.Path, Message: "invalid JSON: " + err.Error()}
	}
}

func shapeOf(v any) string {
	switch v.(type) {
	case *[]json.RawMessage:
		return "array"
	}
	return "object"
}

// decodeItem decodes one element of a JSON array, leaving fields of an odd
// type empty; false when the element is not an object at all.
func decodeItem(raw json.RawMessage, v any) bool {
	err := json.Unmarshal(raw, v)
	var typ *json.UnmarshalTypeError
	return err == nil || (errors.As(err, &typ) && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")))
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    json.RawMessage `json:"source"` // an image block's
}

// contentBlocks reads message content: a string is one text block.
func contentBlocks(raw json.RawMessage) []block {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []block{{Type: "text", Text: s}}
		}
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []block
	for _, it := range items {
		var b block
		if decodeItem(it, &b) {
			out = append(out, b)
		}
	}
	return out
}

// resultText is a tool_result's content as text.
func resultText(raw json.RawMessage) string {
	var parts []string
	for _, b := range contentBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// stringArgs reads a tool_use input as strings: string values as they are,
// others as their JSON.
func stringArgs(input json.RawMessage) map[string]string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out
}
