package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// hostileServer serves the router with the production server settings on
// a real port; slow-client timeouts are shortened so the test is quick.
func hostileServer(t *testing.T, s *testService) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(s.handler)
	cfg := NewServer(s.handler, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cfg.ReadHeaderTimeout, cfg.ReadTimeout = 300*time.Millisecond, time.Second
	srv.Config = cfg
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestHostileBodies(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("base"), http.StatusCreated)
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	huge := strings.Repeat("A", 6<<20)
	for _, c := range []struct {
		name   string
		body   string
		status int
	}{
		{"deeply nested JSON", `{"schema_version":"1.2","session":` + deep + `}`, http.StatusBadRequest},
		{"deeply nested arrays", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), http.StatusBadRequest},
		{"huge unknown key", `{"` + huge + `":1}`, http.StatusBadRequest},
		{"huge number", `{"schema_version":"1.2","session":{"id":"x","agent":{"kind":"k","version":"1"},"workspace":{"root":"/"},"started_at":"2026-01-02T10:00:00Z","metrics":{"cost_usd":1e999999,"api_requests":1,"tokens":{"input":1,"output":1,"cache_read":1,"cache_creation":1}}}}`, http.StatusBadRequest},
		{"NUL bytes outside strings", "{\x00}", http.StatusBadRequest},
		{"empty body", "", http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.snapshot()
			rec := s.push([]byte(c.body))
			if rec.Code != c.status {
				t.Fatalf("push = %d %.200s; want %d", rec.Code, rec.Body, c.status)
			}
			if s.snapshot() != before {
				t.Error("a refused push changed the store")
			}
		})
	}
}

// TestHostileStringsRoundTrip stores strings with NUL bytes, invalid
// UTF-8 and megabytes of text in every kind of field, and reads them back.
func TestHostileStringsRoundTrip(t *testing.T) {
	s := newTestService(t)
	b := newBatch("odd")
	nul := "before\x00after"
	big := strings.Repeat("line of output\n", 200000) // 3 MB
	steps := b["steps"].(arr)
	steps[0].(obj)["payload"].(obj)["text"] = nul
	steps[1].(obj)["payload"].(obj)["stdout"] = big
	steps[1].(obj)["payload"].(obj)["command"] = "echo \xff\xfe"
	steps[4].(obj)["payload"].(obj)["raw"] = obj{"k": nul}
	body := bytes.ReplaceAll(mustJSON(t, b), []byte(`\ufffd`), []byte("\xff")) // raw invalid UTF-8 on the wire
	if rec := s.push(body); rec.Code != http.StatusCreated {
		t.Fatalf("push = %d %.300s", rec.Code, rec.Body)
	}
	d, err := s.store.Detail(context.Background(), "odd", store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *d.Steps[0].Payload.Text; got != nul {
		t.Errorf("text with NUL read back as %q", got)
	}
	if got := *d.Steps[1].Payload.Stdout; got != big {
		t.Errorf("3 MB stdout read back with %d bytes", len(got))
	}
	if got := *d.Steps[1].Payload.Command; !strings.HasPrefix(got, "echo ") {
		t.Errorf("command with invalid UTF-8 read back as %q", got)
	}
	if rec := s.get("/session?id=odd"); rec.Code != http.StatusOK {
		t.Errorf("session page = %d", rec.Code)
	}
}

// TestSlowClientsAreCut sends headers, then a body, slower than the server
// allows: the server closes both connections.
func TestSlowClientsAreCut(t *testing.T) {
	s := newTestService(t)
	srv := hostileServer(t, s)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ name, start string }{
		{"slow headers", "POST /api/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\n"},
		{"slow body", "POST /api/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + testToken +
			"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprint(conn, c.start)
			closed := make(chan struct{})
			go func() {
				io.Copy(io.Discard, conn) // returns when the server closes
				close(closed)
			}()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(5 * time.Second)
			for {
				select {
				case <-closed:
					return
				case <-tick.C:
					conn.Write([]byte("X")) // a byte at a time, never finishing
				case <-deadline:
					t.Fatal("the server kept a slow client's connection open for 5 s")
				}
			}
		})
	}
}

// TestManyConnectionsAtOnce opens 1,000 connections and keeps them open
// while a normal client pushes and reads.
func TestManyConnectionsAtOnce(t *testing.T) {
	s := newTestService(t)
	srv := hostileServer(t, s)
	addr := strings.TrimPrefix(srv.URL, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/ingest", bytes.NewReader(mustJSON(t, newBatch(fmt.Sprintf("c%d", i)))))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			res, err := srv.Client().Do(req)
			if err != nil {
				errs <- err
				return
			}
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("push %d = %d", i, res.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if l, err := s.store.List(context.Background(), store.ListQuery{}); err != nil || l.Total.Sessions != 20 {
		t.Errorf("after 20 pushes beside 1,000 idle connections: %d sessions, %v", l.Total.Sessions, err)
	}
}

// A session of more distinct commands than Commands run shows lists the
// first maxReportRows run and counts the rest; the JSON report lists them
// all.
func TestManyCommandsRunStayBounded(t *testing.T) {
	s := newTestService(t)
	b := newBatch("cmds")
	step := b["steps"].(arr)[1].(obj)
	for i := range maxReportRows + 200 {
		c := obj{}
		for k, v := range step {
			c[k] = v
		}
		c["id"], c["seq"], c["payload"] = fmt.Sprintf("cmds-c%d", i), 10+i, obj{"command": fmt.Sprintf("echo %d", i), "exit_code": 0}
		b["steps"] = append(b["steps"].(arr), c)
	}
	s.mustPush(b, http.StatusCreated)
	var d struct {
		Report struct{ Commands []store.CommandRun }
	}
	if err := json.Unmarshal(s.get("/api/sessions/cmds").Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if want := 1 + maxReportRows + 200; len(d.Report.Commands) != want {
		t.Fatalf("the report lists %d commands; want %d", len(d.Report.Commands), want)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(s.get("/session?id=cmds").Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rows := doc.Find(`[data-testid="commands"] tbody tr`)
	more := strings.TrimSpace(doc.Find(`[data-testid="commands-more"]`).Text())
	last := strings.TrimSpace(rows.Last().Find("code").Text())
	if rows.Length() != maxReportRows || last != d.Report.Commands[maxReportRows-1].Command ||
		!strings.HasPrefix(more, fmt.Sprintf("… and %s more commands", views.Number(int64(len(d.Report.Commands)-maxReportRows)))) {
		t.Errorf("Commands run = %d rows, the last %q, %q; want %d, the last %q, and the rest counted",
			rows.Length(), last, more, maxReportRows, d.Report.Commands[maxReportRows-1].Command)
	}
}

// Commands whose lines name thousands of short file names, and edits of
// 600 files, do not make the session page many times the batch: Files
// touched shows maxReportRows of the files, says how many more there are,
// and each command names at most 16; the JSON report lists them all.
func TestManyFilesTouchedStayBounded(t *testing.T) {
	s := newTestService(t)
	b := newBatch("files")
	step := b["steps"].(arr)[1].(obj)
	var steps arr
	for i := range 200 {
		line := "cat"
		for j := range 1000 {
			line += fmt.Sprintf(" f%d.%d", i, j)
		}
		c := obj{}
		for k, v := range step {
			c[k] = v
		}
		c["id"], c["seq"], c["payload"] = fmt.Sprintf("files-c%d", i), 10+i, obj{"command": line, "exit_code": 0, "cwd": "/tmp/ws"}
		steps = append(steps, c)
	}
	edit := b["steps"].(arr)[2].(obj)
	for i := range 600 {
		e := obj{}
		for k, v := range edit {
			e[k] = v
		}
		e["id"], e["seq"], e["payload"] = fmt.Sprintf("files-e%d", i), 1000+i, obj{"path": fmt.Sprintf("/tmp/ws/e%d.go", i), "old_string": "a", "new_string": "b", "is_full_write": false}
		steps = append(steps, e)
	}
	b["steps"] = append(b["steps"].(arr), steps...)
	body := mustJSON(t, b)
	s.mustPush(b, http.StatusCreated)

	var d struct {
		Report struct{ Files []store.FileTouched }
	}
	rec := s.get("/api/sessions/files")
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if want := 1 + 200*16 + 600; len(d.Report.Files) != want { // main.go, 16 a command, the edits
		t.Errorf("the report lists %d files; want %d", len(d.Report.Files), want)
	}
	page := s.get("/session?id=files")
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rows := doc.Find(`[data-testid="files"] tbody tr`).Length()
	more := strings.TrimSpace(doc.Find(`[data-testid="files-more"]`).Text())
	if rows != maxReportRows || !strings.HasPrefix(more, fmt.Sprintf("… and %s more files", views.Number(int64(len(d.Report.Files)-maxReportRows)))) {
		t.Errorf("Files touched = %d rows, %q; want %d and the rest counted", rows, more, maxReportRows)
	}
	if page.Body.Len() > 2*len(body) {
		t.Errorf("the page is %d bytes for a batch of %d; want at most twice", page.Body.Len(), len(body))
	}
}
