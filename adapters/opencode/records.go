package opencode

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentreview/service/adapters"
)

// sessionInfo is a session's record: the session table's columns, or
// storage/session/<project>/<id>.json, or an export's info.
type sessionInfo struct {
	ID        string `json:"id"`
	Version   string `json:"version"`
	ProjectID string `json:"projectID"`
	Directory string `json:"directory"`
	ParentID  string `json:"parentID"`
	Title     string `json:"title"`
	Time      struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	} `json:"time"`
}

// messageInfo is a message's record (the message table's data column, or
// storage/message/<session>/<id>.json).
type messageInfo struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Role      string `json:"role"`
	Time      struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Agent   string `json:"agent"`
	Mode    string `json:"mode"`
	ModelID string `json:"modelID"`
	Path    struct {
		Cwd  string `json:"cwd"`
		Root string `json:"root"`
	} `json:"path"`
	Cost   *float64 `json:"cost"`
	Tokens *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Error json.RawMessage `json:"error"`
}

// part is one part of a message (the part table's data column, or
// storage/part/<message>/<id>.json).
type part struct {
	ID        string    `json:"id"`
	MessageID string    `json:"messageID"`
	Type      string    `json:"type"`
	Text      string    `json:"text"`
	Synthetic bool      `json:"synthetic"`
	CallID    string    `json:"callID"`
	Tool      string    `json:"tool"`
	State     toolState `json:"state"`
	Time      struct {
		Start int64 `json:"start"`
	} `json:"time"`

	URL string `json:"url"` // a file part's content: a data: URI for an attached image
}

// toolState is a tool part's state: opencode rewrites the part as the call
// goes from pending to running to completed or error.
type toolState struct {
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Output   string          `json:"output"`
	Title    string          `json:"title"`
	Error    string          `json:"error"`
	Metadata json.RawMessage `json:"metadata"`
	Time     struct {
		Start int64 `json:"start"`
	} `json:"time"`
}

type message struct {
	Info  messageInfo `json:"info"`
	Parts []part      `json:"parts"`
	file  string      // the storage file that holds it; "" in an export or a database
}

// record is one session as all three layouts hold it (the shape of
// `opencode export`).
type record struct {
	Info     sessionInfo `json:"info"`
	Messages []message   `json:"messages"`
}

// decode reads one JSON document into v; a document that is not JSON is a
// problem naming the line it breaks on. Fields of the wrong type are left
// empty: opencode adds and changes fields often.
func decode(path string, b []byte, v any) *adapters.Problem {
	err := json.Unmarshal(b, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil, errors.As(err, &typ) && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")):
		return nil
	case errors.As(err, &syn):
		return &adapters.Problem{Path: path, Line: 1 + bytes.Count(b[:min(int(syn.Offset), len(b))], []byte("\n")), Message: "invalid JSON: " + syn.Error()}
	}
	return &adapters.Problem{Path: path, Line: 1, Message: "not a JSON object"}
}

// readFiles reads an export file, or a session's storage files (the
// session file, its message files, then their part files).
func readFiles(b *adapters.Builder, files []adapters.File) *record {
	rec := &record{}
	byID := map[string]int{}
	var parts []part
	for _, f := range files {
		body, err := adapters.ReadDocument(f.Body)
		if err != nil {
			b.Problem(adapters.Problem{Path: f.Path, Message: err.Error()})
			continue
		}
		b.Read(len(body))
		switch storageKind(f.Path) {
		case "message":
			var m messageInfo
			if p := decode(f.Path, body, &m); p != nil {
				b.Problem(*p)
				continue
			}
			m.ID = cmp.Or(m.ID, strings.TrimSuffix(filepath.Base(f.Path), ".json"))
			if _, dup := byID[m.ID]; !dup {
				byID[m.ID] = len(rec.Messages)
				rec.Messages = append(rec.Messages, message{Info: m, file: f.Path})
			}
		case "part":
			var p part
			if pr := decode(f.Path, body, &p); pr != nil {
				b.Problem(*pr)
				continue
			}
			p.MessageID = cmp.Or(p.MessageID, filepath.Base(filepath.Dir(f.Path)))
			parts = append(parts, p)
		case "session":
			if p := decode(f.Path, body, &rec.Info); p != nil {
				b.Problem(*p)
			}
		default: // an export
			if p := decode(f.Path, body, rec); p != nil {
				b.Problem(*p)
			}
		}
	}
	for _, p := range parts {
		if i, ok := byID[p.MessageID]; ok {
			rec.Messages[i].Parts = append(rec.Messages[i].Parts, p)
		} else {
			b.Skip("part without its message")
		}
	}
	sortRecord(rec)
	return rec
}

// storageKind is the folder of storage/ a file is in: session, message or
// part; "" for any other file.
func storageKind(path string) string {
	up := filepath.Dir(filepath.Dir(path))
	if filepath.Base(filepath.Dir(up)) != "storage" {
		return ""
	}
	switch k := filepath.Base(up); k {
	case "session", "message", "part":
		return k
	}
	return ""
}

// sortRecord names records without an id and puts messages and parts in the order opencode made them: its
// ids start with the time they were made, so they sort by time (an export
// or a folder listing need not).
func sortRecord(rec *record) {
	for i := range rec.Messages { // ids for records that lack one, by position
		m := &rec.Messages[i]
		if m.Info.ID == "" {
			m.Info.ID = fmt.Sprintf("message-%d", i+1)
		}
		for j := range m.Parts {
			if m.Parts[j].ID == "" {
				m.Parts[j].ID = fmt.Sprintf("%s-part-%d", m.Info.ID, j+1)
			}
		}
	}
	slices.SortStableFunc(rec.Messages, func(a, b message) int { return strings.Compare(a.Info.ID, b.Info.ID) })
	for i := range rec.Messages {
		slices.SortStableFunc(rec.Messages[i].Parts, func(a, b part) int { return strings.Compare(a.ID, b.ID) })
	}
}

func rowProblem(path, table, id, msg string) adapters.Problem {
	return adapters.Problem{Path: path, Message: fmt.Sprintf("%s %s: %s", table, id, msg)}
}
