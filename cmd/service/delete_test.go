package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// A delete made while another process holds a read snapshot reports
// success at once, from the route and from `service delete`, because the
// deletion committed; the running server finishes the secure overwrite
// and the log truncation once the reader ends.
func TestDeleteWhileAnotherProcessReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := mustBuild(t)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "store.db")
	srv := startServer(t, bin, home, db)
	token := ingestToken(t, home)

	markers := map[string]string{}
	for _, sid := range []string{"via-route", "via-terminal"} {
		var rnd [24]byte
		rand.Read(rnd[:])
		markers[sid] = sid + "-" + hex.EncodeToString(rnd[:])
		body := bytes.Replace(batchJSON(sid, 1), []byte(`"stdout":"`), []byte(`"stdout":"`+markers[sid]), 1)
		if code, body, err := pushTo(srv.base, token, body); err != nil || code != http.StatusCreated {
			t.Fatalf("push %s = %d %s %v; want 201", sid, code, body, err)
		}
	}
	files := func() []byte {
		var all []byte
		for _, name := range store.Files(db) { // the store and its search index, with their logs
			b, err := os.ReadFile(name)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}

	deletes := []struct {
		sid string
		del func() error
	}{
		// First alone: the server finishes what a terminal delete left.
		{"via-terminal", func() error {
			out, err := exec.Command(bin, "delete", "via-terminal", "--db", db).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "deleted session via-terminal") {
				return fmt.Errorf("service delete = %v: %s; want success", err, out)
			}
			return nil
		}},
		{"via-route", func() error {
			req, _ := http.NewRequest(http.MethodDelete, srv.base+"/api/sessions/via-route", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("DELETE = %d; want 200", resp.StatusCode)
			}
			return nil
		}},
	}
	for _, d := range deletes {
		reader, err := sqlite.OpenConn(db, sqlite.OpenReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		end := sqlitex.Transaction(reader)
		if err := sqlitex.Execute(reader, `SELECT count(*) FROM steps`, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.del(); err != nil {
			t.Errorf("delete of %s while another process reads: %v", d.sid, err)
		}
		if !bytes.Contains(files(), []byte(markers[d.sid])) {
			t.Fatalf("the content of %s left the store files while the reader held its snapshot; this test would prove nothing", d.sid)
		}
		if code, _ := getStatus(srv.base + "/api/sessions/" + d.sid); code != http.StatusNotFound {
			t.Errorf("GET %s after its delete = %d; want 404", d.sid, code)
		}
		var endErr error
		end(&endErr)
		reader.Close()
		for deadline := time.Now().Add(5 * time.Second); bytes.Contains(files(), []byte(markers[d.sid])); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("5 s after the reader ended, the content of %s is still in the store files\nserver:\n%s", d.sid, srv.out)
			}
		}
	}
}

func getStatus(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
