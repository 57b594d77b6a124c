package opencode

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzOpencodeParse feeds arbitrary records to Parse: a NUL byte splits
// the input into a session, a message and a part file of the 1.1 storage
// layout; without one it is an export file. It must not panic, and every
// batch must be a valid v1.2 batch.
func FuzzOpencodeParse(f *testing.F) {
	f.Add([]byte(`{"info":{"id":"ses_1","directory":"/w","time":{"created":1}},"messages":[{"info":{"id":"msg_1","role":"user","time":{"created":2}},"parts":[{"id":"prt_1","type":"text","text":"hi"}]}]}`))
	f.Add([]byte("{\"id\":\"ses_1\"}\x00{\"id\":\"msg_1\",\"role\":\"assistant\",\"cost\":1}\x00{\"id\":\"prt_1\",\"type\":\"tool\",\"tool\":\"bash\",\"state\":{\"status\":\"completed\",\"input\":{\"command\":\"ls\"},\"metadata\":{\"exit\":2}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var files []adapters.File
		parts := bytes.SplitN(data, []byte{0}, 3)
		if len(parts) == 1 {
			files = []adapters.File{{Path: "/x/export.json", Body: bytes.NewReader(data)}}
		} else {
			paths := []string{"/d/storage/session/p/ses_1.json", "/d/storage/message/ses_1/msg_1.json", "/d/storage/part/msg_1/prt_1.json"}
			for i, p := range parts {
				files = append(files, adapters.File{Path: paths[i], Body: bytes.NewReader(p)})
			}
		}
		s := Parse(adapters.Unit{ID: "ses_1"}, files)
		for i, b := range s.Batches {
			body, err := json.Marshal(b)
			if err != nil {
				t.Fatalf("batch %d: json.Marshal = %v", i, err)
			}
			if _, err := store.ParseBatch(body); err != nil {
				if inv, ok := err.(*store.InvalidError); ok {
					t.Fatalf("batch %d: ParseBatch = %v %+v\n%s", i, err, inv.Problems, body)
				}
				t.Fatalf("batch %d: ParseBatch = %v\n%s", i, err, body)
			}
		}
	})
}
