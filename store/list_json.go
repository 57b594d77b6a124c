package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes l exactly as json.Marshal(l) encodes it, each session
// from the encoding List made or remembered with it (summaries.go) rather
// than encoded again: the whole list of a large store is mostly those
// bytes. The sessions are written as List returned them: a caller that
// changes l.Sessions encodes l itself. The error is one of encoding, and
// then nothing was written; a writer's error, as writeJSON's in handlers,
// is a client that went away, with nothing left to tell it.
func (l SessionList) WriteJSON(w io.Writer) error {
	rest := l
	rest.Sessions, rest.encoded = nil, nil
	tail, err := json.Marshal(rest)
	const head = `{"sessions":null`
	if err != nil || !bytes.HasPrefix(tail, []byte(head)) {
		return fmt.Errorf("store: encode list: %v", err)
	}
	if l.Sessions == nil {
		w.Write(tail)
		return nil
	}
	items := make([][]byte, len(l.Sessions))
	for i := range l.Sessions {
		if i < len(l.encoded) && l.encoded[i] != nil {
			items[i] = l.encoded[i]
		} else if items[i], err = json.Marshal(l.Sessions[i]); err != nil {
			return fmt.Errorf("store: encode list: session %s: %w", l.Sessions[i].ID, err)
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"sessions":[`)
	for i, b := range items {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(b)
	}
	bw.WriteByte(']')
	bw.Write(tail[len(head):])
	bw.Flush()
	return nil
}
