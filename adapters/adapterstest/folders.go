package adapterstest

import (
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// Folders is what the steps of a session hold of working folders and
// paths: the bytes of every Payload.Cwd and Payload.Path, and how many
// steps record a folder. A folder an agent recorded once and copied into
// each step, or joined to each relative path, is bounded by the builder
// (Builder.Folder); a test of a hostile file compares these with the
// file's size.
func Folders(t testing.TB, s *adapters.Session) (cwdBytes, pathBytes, withCwd int) {
	t.Helper()
	err := s.Each(func(b *store.Batch) error {
		for _, st := range b.Steps {
			if c := st.Payload.Cwd; c != nil {
				cwdBytes += len(*c)
				withCwd++
			}
			pathBytes += len(st.Payload.Path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cwdBytes, pathBytes, withCwd
}
