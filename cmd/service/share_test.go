package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
)

// shareSample is a real Claude Code transcript from the shared samples.
const (
	shareSample    = "/work/shared/samples/claude-code/agentlogs_crud.jsonl"
	shareSessionID = "8122657c-fe54-4dc9-89a3-20049e8a84f7"
	shareWorkspace = "/Users/philipp/dev/vibeinsights/fixtures/claudecode"
	// shareFirstPrompt is part of the sample's first prompt.
	shareFirstPrompt = "create a file `JOKE.md`"
)

// fakeSecret returns n pseudo-random characters from alphabet; secrets
// are made at run time so none sits in the source.
func fakeSecret(seed uint64, alphabet string, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

var (
	shareAWSKey  = "AK" + "IA" + fakeSecret(1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	shareGHToken = "gh" + "p_" + fakeSecret(5, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)
	// sharePrompt is put before the first prompt of the sample,
	// shareFirstPrompt.
	sharePrompt = "deploy with AWS key " + shareAWSKey + " and GitHub token " + shareGHToken + ", then "
)

// shareFixture is a local store with the sample imported and a team
// server (this project's serve on a free port, with a store of its own).
type shareFixture struct {
	dir, db, transcript, tokenFile string
	lines                          []string // the sample, with the secrets in its first prompt
	target                         *shareTarget
}

func newShareFixture(t *testing.T) *shareFixture {
	t.Helper()
	f := newLocalShareFixture(t)
	f.target = startShareTarget(t, filepath.Join(f.dir, "team"), freePort(t))
	f.writeToken(t, f.target.token)
	return f
}

// newLocalShareFixture is the local side of a shareFixture alone: a store
// file to import the sample into, and no team server or token yet.
func newLocalShareFixture(t *testing.T) *shareFixture {
	t.Helper()
	if _, err := os.Stat(shareSample); err != nil {
		t.Skipf("sample not here: %v", err)
	}
	withHome(t)
	f := &shareFixture{dir: t.TempDir()}
	f.db = filepath.Join(f.dir, "local.db")
	f.transcript = filepath.Join(f.dir, "agent", "session.jsonl")
	text := mustRead(t, shareSample)
	if !strings.Contains(text, shareFirstPrompt) {
		t.Fatal("the sample's first prompt changed")
	}
	text = strings.Replace(text, shareFirstPrompt, sharePrompt+shareFirstPrompt, 1)
	f.lines = strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
	return f
}

// writeToken keeps token as the user's team token, in a file only they
// can read, for share's --token-file.
func (f *shareFixture) writeToken(t *testing.T, token string) {
	t.Helper()
	f.tokenFile = filepath.Join(f.dir, "team-token")
	if err := os.WriteFile(f.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// importLines writes the first n lines of the transcript (all: n < 0) and
// imports them into the local store.
func (f *shareFixture) importLines(t *testing.T, n int) {
	t.Helper()
	lines := f.lines
	if n >= 0 {
		lines = lines[:n]
	}
	os.MkdirAll(filepath.Dir(f.transcript), 0o700)
	if err := os.WriteFile(f.transcript, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	runImportCmd(t, "claude-code", filepath.Dir(f.transcript), "--db", f.db)
}

// share runs `service share` with args and the fixture's store and token.
func (f *shareFixture) share(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(append([]string{"share"}, args...), "--db", f.db)
	if !slices.Contains(args, "--auto") || slices.Contains(args, "--workspace") {
		args = append(args, "--token-file", f.tokenFile)
	}
	err := run(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func (f *shareFixture) mustShare(t *testing.T, args ...string) string {
	t.Helper()
	out, err := f.share(t, args...)
	if err != nil {
		t.Fatalf("share %v = %v; output:\n%s", args, err, out)
	}
	return out
}

// localShare is the shares row of the sample session with the target.
func (f *shareFixture) localShare(t *testing.T) store.Share {
	t.Helper()
	st := mustOpenStore(t, f.db)
	defer st.Close()
	sh, err := st.Share(context.Background(), shareSessionID, f.target.base)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// localChanges is what of the sample session changed after stamp locally.
func (f *shareFixture) localChanges(t *testing.T, stamp int64) store.SessionChanges {
	t.Helper()
	st := mustOpenStore(t, f.db)
	defer st.Close()
	ch, err := st.ChangesOf(context.Background(), shareSessionID, stamp)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func mustOpenStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// shareTarget is this project's server, run in this process on a free
// port with its own store and ingest token: it speaks the ingest API a
// team server speaks.
type shareTarget struct {
	base, db, token string
	port            int
	dir             string
	out             *syncBuffer
	stop            func()
}

func startShareTarget(t *testing.T, dir string, port int) *shareTarget {
	t.Helper()
	os.MkdirAll(dir, 0o700)
	tg := &shareTarget{base: fmt.Sprintf("http://127.0.0.1:%d", port), db: filepath.Join(dir, "team.db"), port: port, dir: dir, out: &syncBuffer{}}
	t.Setenv("SERVICE_INGEST_TOKEN_FILE", filepath.Join(dir, "ingest-token"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--port", strconv.Itoa(port), "--db", tg.db}, tg.out, tg.out)
	}()
	stopped := false
	tg.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("team server: %v\n%s", err, tg.out)
		}
	}
	t.Cleanup(tg.stop)
	waitListening(t, port, tg.out)
	tg.token = strings.TrimSpace(mustRead(t, filepath.Join(dir, "ingest-token")))
	return tg
}

// session reads the sample session from the target's API: its JSON and
// the decoded detail; status 404 when it has none.
func (tg *shareTarget) session(t *testing.T) (int, string, store.SessionDetail) {
	t.Helper()
	resp, err := http.Get(tg.base + "/api/sessions/" + shareSessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	var d store.SessionDetail
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, b.String(), d
}

// changedSince is what of the sample session the target stored after stamp.
func (tg *shareTarget) changedSince(t *testing.T, stamp int64) store.SessionChanges {
	t.Helper()
	st := mustOpenStore(t, tg.db) // beside the running server, as any process may
	defer st.Close()
	ch, err := st.ChangesOf(context.Background(), shareSessionID, stamp)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func seqsOf(d store.SessionDetail) []int64 {
	var out []int64
	for _, s := range d.Steps {
		out = append(out, s.Seq)
	}
	slices.Sort(out)
	return out
}

func localDetail(t *testing.T, db string) store.SessionDetail {
	t.Helper()
	st := mustOpenStore(t, db)
	defer st.Close()
	d, err := st.Detail(context.Background(), shareSessionID, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestShareMasksSecrets shares the sample and reads it back from the
// team server: every step is there, the secrets are not, and the local
// manifest names what was masked and where.
func TestShareMasksSecrets(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, -1)
	local := localDetail(t, f.db)

	out := f.mustShare(t, shareSessionID, "--to", f.target.base)
	if want := fmt.Sprintf("%s: shared with %s: %d steps in 1 batch", shareSessionID, f.target.base, len(local.Steps)); !strings.Contains(out, want) {
		t.Errorf("share printed %q; want it to include %q", out, want)
	}

	status, body, remote := f.target.session(t)
	if status != http.StatusOK {
		t.Fatalf("GET the shared session from the team server = %d; want 200", status)
	}
	if !slices.Equal(seqsOf(remote), seqsOf(local)) {
		t.Errorf("team server has steps %v; want the local %v", seqsOf(remote), seqsOf(local))
	}
	for _, secret := range []string{shareAWSKey, shareGHToken} {
		if strings.Contains(body, secret) {
			t.Errorf("the team server's copy holds the secret %s…", secret[:6])
		}
	}

	// Where the secrets were: the local steps that hold them, and the
	// rules that find them in the text put in.
	var secretSeqs []int64
	for _, s := range local.Steps {
		if s.Payload.Text != nil && strings.Contains(*s.Payload.Text, shareAWSKey) {
			secretSeqs = append(secretSeqs, s.Seq)
		}
	}
	if len(secretSeqs) == 0 {
		t.Fatal("no local step holds the secret: the sample did not import as expected")
	}
	var rules []string
	for _, m := range redact.Scan(sharePrompt) {
		rules = append(rules, m.Rule)
	}
	if len(rules) < 2 {
		t.Fatalf("redact finds %v in the prompt; want both secrets found", rules)
	}

	sh := f.localShare(t)
	for _, rule := range rules {
		i := slices.IndexFunc(sh.Manifest, func(g store.ShareFinding) bool { return g.Rule == rule })
		if i < 0 {
			t.Errorf("manifest %+v has no %s", sh.Manifest, rule)
			continue
		}
		g := sh.Manifest[i]
		for _, seq := range secretSeqs {
			if want := fmt.Sprintf("step %d payload.text", seq); !slices.Contains(g.Where, want) {
				t.Errorf("manifest entry %+v does not name %q", g, want)
			}
		}
		if !strings.Contains(body, g.Placeholder) {
			t.Errorf("the team server's copy does not show the placeholder %s", g.Placeholder)
		}
	}
	manifest, _ := json.Marshal(sh.Manifest)
	for _, secret := range []string{shareAWSKey, shareGHToken} {
		if strings.Contains(string(manifest), secret) || strings.Contains(string(manifest), secret[len(secret)-4:]) {
			t.Errorf("the manifest holds (part of) a secret: %s", manifest)
		}
	}
	if stamp := f.localChanges(t, 0).Stamp; sh.Stamp != stamp || sh.Pending != 0 || sh.Steps != int64(len(local.Steps)) {
		t.Errorf("share row = %+v; want stamp %d, nothing pending, %d steps", sh, stamp, len(local.Steps))
	}

	// Nothing changed: nothing is sent.
	if out := f.mustShare(t, shareSessionID, "--to", f.target.base+"/"); !strings.Contains(out, "up to date") {
		t.Errorf("second share printed %q; want up to date", out)
	}
}

// TestShareIncremental shares part of a session, then the rest once the
// agent wrote more: the second share sends only the steps written since.
func TestShareIncremental(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, len(f.lines)/2)
	f.mustShare(t, shareSessionID, "--to", f.target.base)
	first := f.localShare(t)
	_, _, remote := f.target.session(t)
	remoteStamp := f.target.changedSince(t, 0).Stamp

	f.importLines(t, -1)
	changed := f.localChanges(t, first.Stamp)
	if len(changed.Seqs) == 0 {
		t.Fatal("the second import wrote no steps")
	}
	out := f.mustShare(t, shareSessionID, "--to", f.target.base)
	if want := fmt.Sprintf("shared with %s: %s in 1 batch", f.target.base, plural(len(changed.Seqs), "step", "steps")); !strings.Contains(out, want) {
		t.Errorf("second share printed %q; want it to include %q", out, want)
	}
	// The team server wrote exactly the steps changed locally.
	if got := f.target.changedSince(t, remoteStamp).Seqs; !slices.Equal(got, changed.Seqs) {
		t.Errorf("team server wrote steps %v in the second share; want the changed %v", got, changed.Seqs)
	}
	local := localDetail(t, f.db)
	_, _, remote2 := f.target.session(t)
	if !slices.Equal(seqsOf(remote2), seqsOf(local)) || len(remote2.Steps) <= len(remote.Steps) {
		t.Errorf("team server has steps %v after the second share; want the local %v", seqsOf(remote2), seqsOf(local))
	}
	second := f.localShare(t)
	if want := first.Steps + int64(len(changed.Seqs)); second.Steps != want || second.Stamp != changed.Stamp {
		t.Errorf("share row after the second share = %+v; want %d steps, stamp %d", second, want, changed.Stamp)
	}
}

// TestShareResumes stops the team server after the first accepted batch:
// the share fails, the accepted batch is recorded, and the rerun sends
// only the steps the team server did not accept.
func TestShareResumes(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, -1)
	local := localDetail(t, f.db)
	const perBatch = 5
	if len(local.Steps) <= perBatch {
		t.Fatalf("the sample has %d steps; want more than %d", len(local.Steps), perBatch)
	}

	st := mustOpenStore(t, f.db)
	var out bytes.Buffer
	sh := newSharer(st, f.target.base, f.target.token, &out)
	sh.maxSteps = perBatch
	sh.accepted = f.target.stop // the team server goes away after the first batch
	err := sh.share(context.Background(), shareSessionID)
	st.Close()
	if err == nil {
		t.Fatalf("share with the team server stopped mid-way = nil; want an error (output %q)", out.String())
	}

	cut := f.localShare(t)
	if len(cut.PendingSeqs) != perBatch || cut.Stamp != 0 || cut.Pending == 0 || cut.Steps != perBatch {
		t.Errorf("share row after the cut = %+v; want %d pending seqs, stamp 0", cut, perBatch)
	}
	stored := f.target.changedSince(t, 0)
	if !slices.Equal(stored.Seqs, cut.PendingSeqs) {
		t.Errorf("team server stored %v before it stopped; the share row says %v", stored.Seqs, cut.PendingSeqs)
	}

	f.target = startShareTarget(t, f.target.dir, f.target.port)
	rerun := f.mustShare(t, shareSessionID, "--to", f.target.base)
	if want := fmt.Sprintf("%d steps in 1 batch", len(local.Steps)-perBatch); !strings.Contains(rerun, want) {
		t.Errorf("rerun printed %q; want it to include %q", rerun, want)
	}
	if got := f.target.changedSince(t, stored.Stamp).Seqs; slices.ContainsFunc(got, func(s int64) bool { return slices.Contains(cut.PendingSeqs, s) }) {
		t.Errorf("rerun wrote %v again on the team server; it had %v", got, cut.PendingSeqs)
	}
	_, _, remote := f.target.session(t)
	if !slices.Equal(seqsOf(remote), seqsOf(local)) {
		t.Errorf("team server has steps %v after the rerun; want %v", seqsOf(remote), seqsOf(local))
	}
	done := f.localShare(t)
	if done.Pending != 0 || len(done.PendingSeqs) != 0 || done.Steps != int64(len(local.Steps)) || done.Stamp != cut.Pending {
		t.Errorf("share row after the rerun = %+v; want nothing pending, %d steps, stamp %d", done, len(local.Steps), cut.Pending)
	}
}

// TestShareStopsAtGone: a session deleted on the team server is refused
// there (410); the share says so, records it, and never pushes it again.
func TestShareStopsAtGone(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, len(f.lines)/2)
	f.mustShare(t, shareSessionID, "--to", f.target.base)

	req, _ := http.NewRequest(http.MethodDelete, f.target.base+"/api/sessions/"+shareSessionID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE on the team server = %d", resp.StatusCode)
	}

	f.importLines(t, -1) // the session goes on locally
	out, err := f.share(t, shareSessionID, "--to", f.target.base)
	if err == nil || !strings.Contains(out, "was deleted on "+f.target.base+" (410)") {
		t.Errorf("share after the team server deleted it = %v, %q; want an error and the 410 said", err, out)
	}
	if sh := f.localShare(t); !sh.Gone {
		t.Errorf("share row = %+v; want it recorded as gone", sh)
	}

	// Never pushed again: with the team server down, the share still
	// answers from the record, not with a failed connection.
	f.target.stop()
	out, err = f.share(t, shareSessionID, "--to", f.target.base)
	if err == nil || !strings.Contains(out, "it is not shared there again") || strings.Contains(out, "refused") {
		t.Errorf("share of a gone session = %v, %q; want it refused from the record", err, out)
	}
}

// TestShareWorkspaceRule saves a rule for the sample's workspace; a later
// `share --auto` runs it and sends what changed.
func TestShareWorkspaceRule(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, len(f.lines)/2)
	out := f.mustShare(t, "--workspace", shareWorkspace, "--to", f.target.base, "--auto")
	if !strings.Contains(out, "saved the rule") || !strings.Contains(out, shareSessionID+": shared with") {
		t.Errorf("share --workspace --auto printed %q; want the rule saved and the session shared", out)
	}
	first := f.localShare(t)

	f.importLines(t, -1)
	changed := f.localChanges(t, first.Stamp)
	out = f.mustShare(t, "--auto")
	if want := plural(len(changed.Seqs), "step", "steps") + " in 1 batch"; !strings.Contains(out, want) {
		t.Errorf("share --auto printed %q; want it to include %q", out, want)
	}
	_, _, remote := f.target.session(t)
	if !slices.Equal(seqsOf(remote), seqsOf(localDetail(t, f.db))) {
		t.Errorf("team server has steps %v after share --auto; want every local step", seqsOf(remote))
	}
	if out := f.mustShare(t, "--auto"); !strings.Contains(out, "up to date") {
		t.Errorf("share --auto with nothing new printed %q; want up to date", out)
	}
}

// TestShareRefusesBadInput: each bad command line or token file is a clear
// error, and nothing reaches the team server or the shares table.
func TestShareRefusesBadInput(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, -1)
	loose := filepath.Join(f.dir, "loose-token")
	os.WriteFile(loose, []byte(f.target.token), 0o600)
	os.Chmod(loose, 0o644)
	wrong := filepath.Join(f.dir, "wrong-token")
	os.WriteFile(wrong, []byte(strings.Repeat("x", 43)), 0o600)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"token readable by others", []string{shareSessionID, "--to", f.target.base, "--token-file", loose}, "can be read or changed by other users"},
		{"no token file", []string{shareSessionID, "--to", f.target.base, "--token-file", filepath.Join(f.dir, "none")}, "does not exist"},
		{"token refused", []string{shareSessionID, "--to", f.target.base, "--token-file", wrong}, "answered 401"},
		{"plain http elsewhere", []string{shareSessionID, "--to", "http://team.example.com"}, "use https"},
		{"not a URL", []string{shareSessionID, "--to", "ftp://team.example.com"}, "not a team server's address"},
		{"no target", []string{shareSessionID}, "--to URL"},
		{"ids and workspace", []string{shareSessionID, "--workspace", shareWorkspace, "--to", f.target.base}, "not both"},
		{"auto with ids", []string{shareSessionID, "--auto", "--to", f.target.base}, "--auto saves a rule"},
		{"nothing named", []string{}, "name the sessions"},
		{"no rules saved", []string{"--auto"}, "no sharing rules are saved"},
		{"unknown session", []string{"nope", "--to", f.target.base}, `no session "nope" in the store`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append(append([]string{"share"}, tc.args...), "--db", f.db)
			if !slices.Contains(tc.args, "--token-file") && len(tc.args) > 1 && !slices.Contains(tc.args, "--auto") {
				args = append(args, "--token-file", f.tokenFile)
			}
			err := run(context.Background(), args, &out, &errOut)
			all := out.String() + errOut.String()
			if err != nil {
				all += err.Error()
			}
			if err == nil || !strings.Contains(all, tc.want) {
				t.Errorf("share %v = %v, %q; want an error saying %q", tc.args, err, all, tc.want)
			}
		})
	}
	if status, _, _ := f.target.session(t); status != http.StatusNotFound {
		t.Errorf("team server answers %d for the session; want 404: nothing was shared", status)
	}
	st := mustOpenStore(t, f.db)
	defer st.Close()
	if shares, err := st.Shares(context.Background(), shareSessionID); err != nil || len(shares) != 0 {
		t.Errorf("Shares = %+v, %v; want none", shares, err)
	}
	if rules, err := st.ShareRules(context.Background()); err != nil || len(rules) != 0 {
		t.Errorf("ShareRules = %+v, %v; want none", rules, err)
	}
}

// TestDeleteTeamCopy deletes a shared session locally: kept on the team
// server unless asked, deleted there with --team-copy=delete.
func TestDeleteTeamCopy(t *testing.T) {
	f := newShareFixture(t)
	f.importLines(t, -1)
	f.mustShare(t, shareSessionID, "--to", f.target.base)

	var out bytes.Buffer
	// Not a terminal: nobody to ask, so the team copy is kept and the way
	// to delete it is printed.
	err := runWithStdin(context.Background(), []string{"delete", shareSessionID, "--db", f.db}, strings.NewReader("y\n"), &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "--team-copy=delete"; !strings.Contains(out.String(), want) {
		t.Errorf("delete printed %q; want it to say how to delete the team copy (%s)", out.String(), want)
	}
	if status, _, _ := f.target.session(t); status != http.StatusOK {
		t.Fatalf("team copy after a local delete that kept it: %d; want 200", status)
	}

	out.Reset()
	err = run(context.Background(), []string{"delete", shareSessionID, "--db", f.db, "--team-copy=delete", "--token-file", f.tokenFile}, &out, &out)
	if err != nil {
		t.Fatalf("delete --team-copy=delete = %v; output %q", err, out.String())
	}
	if !strings.Contains(out.String(), "deleted the team copy on "+f.target.base) {
		t.Errorf("delete printed %q; want the team copy deleted", out.String())
	}
	if status, _, _ := f.target.session(t); status != http.StatusNotFound {
		t.Errorf("team copy after delete --team-copy=delete: %d; want 404", status)
	}
	if sh := f.localShare(t); !sh.Gone {
		t.Errorf("share row = %+v; want gone", sh)
	}
}

func TestAskYes(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "YES\n": true, " y \n": true, "\n": false, "n\n": false, "": false, "yess\n": false} {
		var out bytes.Buffer
		if got := askYes(strings.NewReader(answer), &out, "Delete?"); got != want {
			t.Errorf("askYes(%q) = %v; want %v", answer, got, want)
		}
		if out.String() != "Delete? [y/N] " {
			t.Errorf("askYes printed %q", out.String())
		}
	}
}

// TestShareLeavesOutAStepNoBatchHolds: a step larger than the ingest body
// limit is named and left out; the rest of the session is shared.
func TestShareLeavesOutAStepNoBatchHolds(t *testing.T) {
	f := newShareFixture(t)
	sid := "big-step"
	st := mustOpenStore(t, f.db)
	body := fmt.Sprintf(`{"schema_version":"1.2",
		"session":{"id":%[1]q,"agent":{"kind":"test","version":"1"},"workspace":{"root":"/w"},"started_at":"2026-01-02T10:00:00Z"},
		"segments":[{"index":0,"start_reason":"start","started_at":"2026-01-02T10:00:00Z","source_files":[]}],
		"actors":[{"id":"root","type":"root"}],
		"turns":[{"id":"t1","session_id":%[1]q,"segment_index":0,"actor_id":"root","index":1,"started_at":"2026-01-02T10:00:00Z","step_ids":[]}],
		"steps":[
		 {"id":"s1","session_id":%[1]q,"segment_index":0,"turn_id":"t1","actor_id":"root","seq":1,"at":"2026-01-02T10:00:01Z","type":"command","decision":"accepted","outcome":"ok","content_status":"inline","channels":[],"flags":[],"payload":{"command":"cat big","stdout":%[2]q}},
		 {"id":"s2","session_id":%[1]q,"segment_index":0,"turn_id":"t1","actor_id":"root","seq":2,"at":"2026-01-02T10:00:02Z","type":"command","decision":"accepted","outcome":"ok","content_status":"inline","channels":[],"flags":[],"payload":{"command":"echo small","stdout":"small"}}]}`,
		sid, strings.Repeat("big output line\n", (maxBody/16)+1))
	b, err := store.ParseBatch([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := f.mustShare(t, sid, "--to", f.target.base)
	if !strings.Contains(out, "step 1 is larger than a batch may be") || !strings.Contains(out, "1 step in 1 batch") {
		t.Errorf("share printed %q; want step 1 named as left out and 1 step shared", out)
	}
	resp, err := http.Get(f.target.base + "/api/sessions/" + sid)
	if err != nil {
		t.Fatal(err)
	}
	var d store.SessionDetail
	json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	if !slices.Equal(seqsOf(d), []int64{2}) {
		t.Errorf("team server has steps %v; want [2]", seqsOf(d))
	}
}

// TestShareTerminalSafe: a session id is the agent's, and reaches the
// terminal of whoever shares it without its control characters.
func TestShareTerminalSafe(t *testing.T) {
	f := newShareFixture(t)
	const escaped = `\u001b]0;pwned\u0007\u001b[2J` // in the transcript's JSON
	id := shareSessionID + "\x1b]0;pwned\x07\x1b[2J"
	for i := range f.lines {
		f.lines[i] = strings.ReplaceAll(f.lines[i], shareSessionID, shareSessionID+escaped)
	}
	f.importLines(t, -1)
	for range 2 { // shared, then up to date
		out := f.mustShare(t, id, "--to", f.target.base)
		if !strings.Contains(out, shareSessionID) || strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }) {
			t.Errorf("share printed %q; want the session's id without its control characters", out)
		}
	}
}
