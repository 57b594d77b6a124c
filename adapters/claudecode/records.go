package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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
	Message          message         `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	Content          json.RawMessage `json:"content"`
	Data             json.RawMessage `json:"data"`
	ParentToolUseID  string          `json:"parentToolUseID"`
	// A system api_error record: the request's error ({message, status,
	// formatted}) and which retry comes next.
	Error        json.RawMessage `json:"error"`
	RetryAttempt int             `json:"retryAttempt"`
	MaxRetries   int             `json:"maxRetries"`
}

// decodeOptions make the one-pass decoder read what encoding/json would:
// invalid UTF-8 becomes U+FFFD, a repeated name keeps its last value, and
// names match regardless of case.
var decodeOptions = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true),
	jsonv2.MatchCaseInsensitiveNames(true))

// decodeRecord reads one line, in one pass over its bytes. A field of an
// unexpected type is left empty rather than losing the whole line (such a
// line is read again the slower way that allows it); only broken JSON, or
// JSON that is not an object, is an error.
func decodeRecord(line []byte) (*record, error) {
	var r record
	err := jsonv2.Unmarshal(line, &r, decodeOptions)
	if err == nil {
		return &r, nil
	}
	r = record{}
	err = json.Unmarshal(line, &r)
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
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Model   string  `json:"model"`
	Content content `json:"content"`
	Usage   *usage  `json:"usage"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		// Of CacheCreationInputTokens, those written for an hour (the
		// rest for five minutes), which cost more.
		Hour int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
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
	Content   content         `json:"content"`
	IsError   bool            `json:"is_error"`
	raw       json.RawMessage // the block's JSON, kept for images and block types the adapter does not know
}

// knownBlocks are the block types the adapter maps; others keep their raw
// JSON for an other step.
var knownBlocks = map[string]bool{"text": true, "thinking": true, "redacted_thinking": true, "tool_use": true,
	"tool_result": true, "image": true, "document": true}

// content is a message's (or a tool result's) content: a plain string
// becomes one text block; a block with a field of an unexpected type keeps
// what decoded (one that is not an object, nothing but its raw JSON).
type content []block

// UnmarshalJSONFrom reads content in the one pass over the line.
func (c *content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		*c = content{{Type: "text", Text: tok.String()}}
		return nil
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		*c = nil
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			var b block
			if err := jsonv2.Unmarshal(v, &b, decodeOptions); err != nil {
				b = block{}
				json.Unmarshal(v, &b) // keeps what decodes, as for a record
			}
			if !knownBlocks[b.Type] || b.Type == "image" {
				b.raw = json.RawMessage(v.Clone()) // an image is kept as written: its step shows it
			}
			*c = append(*c, b)
		}
		_, err := dec.ReadToken()
		return err
	}
	*c = nil
	return dec.SkipValue()
}

// UnmarshalJSON reads content for encoding/json, on the slower path of a
// record with an odd field.
func (c *content) UnmarshalJSON(b []byte) error {
	return c.UnmarshalJSONFrom(jsontext.NewDecoder(bytes.NewReader(b), decodeOptions))
}

// images is the image blocks of a content, as written.
func (c content) images() []json.RawMessage {
	var out []json.RawMessage
	for _, b := range c {
		if b.Type == "image" && b.raw != nil {
			out = append(out, b.raw)
		}
	}
	return out
}

// text is the text blocks of a tool result's content joined by newlines.
func (c content) text() string {
	var parts []string
	for _, b := range c {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// decode is json.Unmarshal in the one-pass decoder, for the parts of a
// line kept raw.
func decode(data []byte, v any) error { return jsonv2.Unmarshal(data, v, decodeOptions) }

// object decodes a raw JSON object into its fields; nil if it is not one.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if decode(raw, &m) != nil {
		return nil
	}
	return m
}

func str(m map[string]json.RawMessage, key string) string {
	var s string
	if v, ok := m[key]; ok {
		decode(v, &s)
	}
	return s
}

func num(m map[string]json.RawMessage, key string) (int64, bool) {
	var f float64
	v, ok := m[key]
	if !ok || decode(v, &f) != nil {
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
		decode(v, &b)
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
