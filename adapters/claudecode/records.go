package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// record is one line of a transcript. Only the fields the adapter reads
// are decoded; the shapes that vary by record or tool stay raw.
type record struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	ParentUUID       string          `json:"parentUuid"`
	SessionID        string          `json:"sessionId"`
	Timestamp        string          `json:"timestamp"`
	Cwd              string          `json:"cwd"`
	Version          string          `json:"version"`
	IsSidechain      bool            `json:"isSidechain"`
	AgentID          string          `json:"agentId"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	IsAPIError       bool            `json:"isApiErrorMessage"`
	PermissionMode   string          `json:"permissionMode"`
	RequestID        string          `json:"requestId"`
	Message          json.RawMessage `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	Content          json.RawMessage `json:"content"`
	Data             json.RawMessage `json:"data"`
	ParentToolUseID  string          `json:"parentToolUseID"`
}

// decodeRecord reads one line. A field of an unexpected type is left
// empty rather than losing the whole line; only broken JSON, or JSON that
// is not an object, is an error.
func decodeRecord(line []byte) (*record, error) {
	var r record
	err := json.Unmarshal(line, &r)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !(errors.As(err, &typeErr) && bytes.HasPrefix(bytes.TrimSpace(line), []byte("{"))) {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || !json.Valid(line) {
			return nil, errors.New("invalid JSON")
		}
		return nil, errors.New("not a JSON object")
	}
	return &r, nil
}

type message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *usage          `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
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
	raw       json.RawMessage
}

func decodeMessage(raw json.RawMessage) message {
	var m message
	if len(raw) > 0 {
		json.Unmarshal(raw, &m) // a partly odd message keeps what decoded
	}
	return m
}

// contentBlocks reads message content: a plain string becomes one text
// block; blocks that do not decode are dropped.
func contentBlocks(raw json.RawMessage) (blocks []block, plain bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []block{{Type: "text", Text: s}}, true
		}
		return nil, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	for _, it := range items {
		var b block
		if err := json.Unmarshal(it, &b); err != nil {
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) {
				continue
			}
		}
		b.raw = it
		blocks = append(blocks, b)
	}
	return blocks, false
}

// resultText is the text of a tool_result's content: a string, or the
// text blocks of an array joined by newlines.
func resultText(raw json.RawMessage) string {
	blocks, _ := contentBlocks(raw)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// object decodes a raw JSON object into its fields; nil if it is not one.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func str(m map[string]json.RawMessage, key string) string {
	var s string
	if v, ok := m[key]; ok {
		json.Unmarshal(v, &s)
	}
	return s
}

func num(m map[string]json.RawMessage, key string) (int64, bool) {
	var f float64
	v, ok := m[key]
	if !ok || json.Unmarshal(v, &f) != nil {
		return 0, false
	}
	if f > 1<<53 || f < -(1<<53) {
		return 0, false
	}
	return int64(f), true
}

func boolean(m map[string]json.RawMessage, key string) bool {
	var b bool
	if v, ok := m[key]; ok {
		json.Unmarshal(v, &b)
	}
	return b
}

// rawJSON is a value to embed in an other step's raw object; null and
// missing values are left out by the caller.
func rawJSON(v json.RawMessage) any {
	if len(v) == 0 {
		return nil
	}
	return v
}
