package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
)

// ShareCmd is `service share ID... --to URL`, `service share --workspace
// DIR --to URL [--auto]` and `service share --auto`.
type ShareCmd struct {
	IDs       []string `arg:"" optional:"" name:"id" help:"Ids of the sessions to share."`
	To        string   `help:"Base URL of the team server: https://..., or http:// on this machine." placeholder:"URL"`
	Workspace string   `help:"Share every session whose workspace is this folder." placeholder:"DIR"`
	Auto      bool     `help:"With --workspace: save it as a rule, run again by each later 'service share --auto'. Alone: run every saved rule."`
	TokenFile string   `help:"File holding your token for the team server, readable by you only (default ~/.service/team-token)." placeholder:"PATH"`
	DB        string   `help:"Store file (default ~/.service/store.db)." placeholder:"PATH"`
}

// Run shares the sessions named, those of a workspace, or those of every
// saved rule, each masked by the export's redaction before it is sent.
func (c *ShareCmd) Run(e *env) error {
	if err := c.check(); err != nil {
		return err
	}
	st, _, err := openStore(e, c.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	var rules []store.ShareRule
	switch {
	case len(c.IDs) > 0 || c.Workspace != "":
		tokenFile, err := teamTokenPath(c.TokenFile)
		if err != nil {
			return err
		}
		r := store.ShareRule{Workspace: c.Workspace, Target: c.To, TokenFile: tokenFile}
		if c.Auto {
			if err := st.AddShareRule(e.ctx, r); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "saved the rule: every session of %s is shared with %s on each 'service share --auto'\n", r.Workspace, r.Target)
		}
		rules = []store.ShareRule{r}
	default: // --auto alone
		if rules, err = st.ShareRules(e.ctx); err != nil {
			return err
		}
		if len(rules) == 0 {
			return errors.New("no sharing rules are saved: add one with 'service share --workspace DIR --to URL --auto'")
		}
	}
	failed := 0
	for _, r := range rules {
		failed += c.runRule(e, st, r)
	}
	if failed > 0 {
		return fmt.Errorf("%d session(s) not shared; see above", failed)
	}
	return nil
}

// check validates the flags and puts the target URL and the workspace in
// the form they are stored in.
func (c *ShareCmd) check() error {
	switch {
	case len(c.IDs) > 0 && c.Workspace != "":
		return errors.New("name sessions or --workspace, not both")
	case len(c.IDs) > 0 && c.Auto:
		return errors.New("--auto saves a rule for a workspace: use it with --workspace, or alone to run the saved rules")
	case len(c.IDs) == 0 && c.Workspace == "" && !c.Auto:
		return errors.New("name the sessions to share, or --workspace DIR, or --auto to run the saved rules")
	case len(c.IDs) == 0 && c.Workspace == "" && (c.To != "" || c.TokenFile != ""):
		return errors.New("--auto alone runs the saved rules with their own targets and token files: drop --to and --token-file")
	}
	if c.Workspace != "" {
		dir, err := filepath.Abs(c.Workspace)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", c.Workspace, err)
		}
		c.Workspace = dir
	}
	if len(c.IDs) > 0 || c.Workspace != "" {
		if c.To == "" {
			return errors.New("--to URL names the team server to share with")
		}
		target, err := teamURL(c.To)
		if err != nil {
			return err
		}
		c.To = target
	}
	return nil
}

// runRule shares the sessions of one rule (or of the command line) and
// returns how many could not be shared.
func (c *ShareCmd) runRule(e *env, st *store.Store, r store.ShareRule) int {
	ids := c.IDs
	if r.Workspace != "" {
		var err error
		if ids, err = st.WorkspaceSessions(e.ctx, r.Workspace); err != nil {
			fmt.Fprintln(e.stderr, err)
			return 1
		}
		if len(ids) == 0 {
			fmt.Fprintf(e.stdout, "no sessions of %s to share\n", r.Workspace)
			return 0
		}
	}
	token, err := readTeamToken(r.TokenFile)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return len(ids)
	}
	sh := newSharer(st, r.Target, token, e.stdout)
	failed := 0
	for _, id := range ids {
		if err := sh.share(e.ctx, id); err != nil {
			var gone *goneError
			if errors.As(err, &gone) && gone.before && r.Workspace != "" {
				continue // a rule passes over it quietly: it was said when it happened
			}
			fmt.Fprintln(e.stderr, err)
			failed++
		}
	}
	return failed
}

// teamURL checks a team server's base URL and returns it without a
// trailing slash. A token goes in clear over http, so http is only for
// this machine.
func teamURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("--to %q is not a team server's address: give its base URL, like https://review.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--to %q: give the team server's base URL, without a user, query or fragment", raw)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return "", fmt.Errorf("--to %q: your token would cross the network in clear; use https (plain http is only for 127.0.0.1)", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// teamTokenPath is --token-file made absolute, or ~/.service/team-token.
func teamTokenPath(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	dir, err := serviceDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "team-token"), nil
}

// readTeamToken reads the user's token for a team server from path, which
// must be a regular file no one else can read or change.
func readTeamToken(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("team token file %s does not exist: ask the team server's admin for your token ('service team token add'), and save it there with chmod 600", path)
	}
	if err != nil {
		return "", fmt.Errorf("team token file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("team token file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("team token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("team token file %s can be read or changed by other users (mode %04o): run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("team token file %s: %w", path, err)
	}
	token := strings.TrimSpace(string(b))
	if len(b) > maxTokenFile || token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", fmt.Errorf("team token file %s does not hold one token", path)
	}
	return token, nil
}

// Limits of one batch the sharer sends (SPEC.md section 8): at most
// store.MaxItems of each kind, and a body of at most 8 MB before gzip;
// batchBytes leaves room below it for the JSON around the records.
const (
	maxBody    = 8 << 20
	batchBytes = maxBody - 64<<10
)

// sharer sends sessions to one team server.
type sharer struct {
	st       *store.Store
	target   string
	token    string
	out      io.Writer
	client   *http.Client
	maxSteps int // steps per batch
	// accepted runs after each batch the target accepted and was
	// recorded; tests stop the target there.
	accepted func()
}

func newSharer(st *store.Store, target, token string, out io.Writer) *sharer {
	return &sharer{st: st, target: target, token: token, out: out,
		client: &http.Client{Timeout: 2 * time.Minute}, maxSteps: store.MaxItems}
}

// goneError is a session the team server deleted (410): it is never sent
// there again. before is set when that was recorded by an earlier share.
type goneError struct {
	id, target string
	before     bool
}

func (e *goneError) Error() string {
	return fmt.Sprintf("session %s was deleted on %s (410): it is not shared there again", e.id, e.target)
}

// shareRun is one share of one session: what it sends, and what it
// recorded of the share so far.
type shareRun struct {
	*sharer
	sh     store.Share
	m      *redact.Masker
	d      store.SessionDetail // masked, without steps
	turnAt map[string]int      // position of each turn in d.Turns
	b      store.Batch         // the batch being filled
	bytes  int                 // JSON bytes of b
	base   int                 // JSON bytes of b without turns and steps
	sent   int                 // steps sent by this run
	calls  int                 // batches sent by this run
}

// share sends what of session id changed since its last share with the
// target, in batches; each accepted batch is recorded, so a share cut off
// resumes with what the target did not accept.
func (s *sharer) share(ctx context.Context, id string) error {
	sh, err := s.st.Share(ctx, id, s.target)
	if err != nil {
		return err
	}
	if sh.Gone {
		return &goneError{id, s.target, true}
	}
	ch, err := s.st.ChangesOf(ctx, id, sh.Stamp)
	if err != nil {
		return notStored(id, err)
	}
	if sh.Pending == 0 {
		if ch.Stamp == sh.Stamp {
			fmt.Fprintf(s.out, "%s: up to date on %s\n", terminalSafe(id), s.target)
			return nil
		}
		sh.Pending, sh.PendingSeqs = ch.Stamp, nil
	}
	want := map[int64]bool{}
	for _, seq := range ch.Seqs {
		want[seq] = true
	}
	for _, seq := range sh.PendingSeqs {
		delete(want, seq) // the target has it from the share cut off
	}
	run := &shareRun{sharer: s, sh: sh}
	if err := run.send(ctx, want, ch.Turns); err != nil {
		return fmt.Errorf("share %s with %s: %w", id, s.target, err)
	}
	run.sh.Stamp, run.sh.Pending, run.sh.PendingSeqs = run.sh.Pending, 0, nil
	if err := s.st.SaveShare(ctx, run.sh); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "%s: shared with %s: %s in %s%s\n", terminalSafe(id), s.target, plural(run.sent, "step", "steps"), plural(run.calls, "batch", "batches"), maskedSummary(run.sh.Manifest))
	return nil
}

// send reads the session as the export does, masked, and sends the wanted
// steps (by seq) and the changed turns.
func (r *shareRun) send(ctx context.Context, want map[int64]bool, turns []string) error {
	var err error
	if r.m, r.d, err = redact.ReadSession(ctx, r.st, r.sh.SessionID, nil); err != nil {
		return err
	}
	if len(r.d.Segments) > store.MaxItems || len(r.d.Actors) > store.MaxItems {
		return fmt.Errorf("the session has more than %d segments or actors, more than one batch may carry", store.MaxItems)
	}
	d := r.d
	r.b = store.Batch{
		SchemaVersion: store.SchemaVersion,
		Session: store.SessionHeader{ID: d.ID, Agent: d.Agent, Workspace: d.Workspace,
			StartedAt: d.StartedAt, EndedAt: d.EndedAt, Source: d.Source, Metrics: d.Metrics},
		Segments: d.Segments,
		Actors:   d.Actors,
	}
	r.base = jsonSize(r.b)
	r.bytes = r.base
	r.turnAt = map[string]int{}
	for i, t := range d.Turns {
		r.turnAt[t.ID] = i
	}
	for _, id := range turns {
		if err := r.addTurn(ctx, id); err != nil {
			return err
		}
	}
	left := len(want)
	// The steps are read in the export's order, so they are masked with
	// the export's placeholders; the walk stops after the last wanted step.
	for _, t := range d.Turns {
		for after := int64(-1); left > 0; {
			page, err := redact.ReadTurnSteps(ctx, r.m, r.st, d.ID, t.ID, after, shareBudget)
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			for _, step := range page {
				if !want[step.Seq] {
					continue
				}
				left--
				if err := r.addStep(ctx, step); err != nil {
					return err
				}
			}
			after = page[len(page)-1].Seq
		}
	}
	if len(r.b.Steps) > 0 || len(r.b.Turns) > 0 || r.calls == 0 {
		return r.flush(ctx) // the last batch, or the header alone when only it changed
	}
	return nil
}

// shareBudget is how many bytes of steps a share reads at a time.
const shareBudget = 4 << 20

// addTurn puts the turn in the batch, unless it is there already.
func (r *shareRun) addTurn(ctx context.Context, id string) error {
	i, ok := r.turnAt[id]
	if !ok || slices.ContainsFunc(r.b.Turns, func(t store.Turn) bool { return t.ID == id }) {
		return nil
	}
	t := r.d.Turns[i]
	n := jsonSize(t) + 1
	if len(r.b.Turns) >= store.MaxItems || r.bytes+n > batchBytes {
		if err := r.flush(ctx); err != nil {
			return err
		}
	}
	r.b.Turns = append(r.b.Turns, t)
	r.bytes += n
	return nil
}

// addStep puts the step and its turn in the batch, sending the batch
// first when the step would not fit; a step no batch can hold is left out.
func (r *shareRun) addStep(ctx context.Context, s store.Step) error {
	n := jsonSize(s) + 1
	t := 0
	if i, ok := r.turnAt[s.TurnID]; ok {
		t = jsonSize(r.d.Turns[i]) + 1
	}
	if r.base+n+t > batchBytes {
		// No team server takes it (the ingest body limit): say so and go
		// on, rather than stop every later share of the session here.
		fmt.Fprintf(r.out, "%s: step %d is larger than a batch may be (%d bytes): not shared\n", terminalSafe(s.SessionID), s.Seq, maxBody)
		return nil
	}
	if len(r.b.Steps) >= r.maxSteps || r.bytes+n+t > batchBytes {
		if err := r.flush(ctx); err != nil {
			return err
		}
	}
	if err := r.addTurn(ctx, s.TurnID); err != nil {
		return err
	}
	r.b.Steps = append(r.b.Steps, s)
	r.bytes += n
	return nil
}

// flush sends the batch, records what the target accepted, and starts the
// next batch with the header, segments and actors again (a re-send
// changes nothing on the target).
func (r *shareRun) flush(ctx context.Context) error {
	status, msg, err := r.post(ctx, &r.b)
	if err != nil {
		return err
	}
	switch {
	case status == http.StatusGone:
		r.sh.Gone = true
		if err := r.st.SaveShare(ctx, r.sh); err != nil {
			return err
		}
		return &goneError{r.sh.SessionID, r.target, false}
	case status != http.StatusOK && status != http.StatusCreated:
		return fmt.Errorf("the team server answered %d: %s", status, msg)
	}
	r.calls++
	r.sent += len(r.b.Steps)
	for _, s := range r.b.Steps {
		r.sh.PendingSeqs = append(r.sh.PendingSeqs, s.Seq)
	}
	r.sh.Steps += int64(len(r.b.Steps))
	r.sh.SharedAt = time.Now().UTC()
	r.sh.Manifest = mergeManifest(r.sh.Manifest, r.sentFindings())
	if err := r.st.SaveShare(ctx, r.sh); err != nil {
		return err
	}
	if r.accepted != nil {
		r.accepted()
	}
	r.b.Turns, r.b.Steps, r.bytes = nil, nil, r.base
	return nil
}

// post sends one batch, gzipped, and returns the status and the error
// message of the answer.
func (r *shareRun) post(ctx context.Context, b *store.Batch) (int, string, error) {
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	if err := json.NewEncoder(zw).Encode(b); err != nil {
		return 0, "", err
	}
	if err := zw.Close(); err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.target+"/api/ingest", &body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var answer struct {
		Error string `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(raw, &answer) != nil || answer.Error == "" {
		answer.Error = strings.TrimSpace(string(raw))
	}
	return resp.StatusCode, answer.Error, nil
}

// sentFindings are the masker's findings at the places of the batch just
// sent: the header, segments and actors, its turns, and its steps.
func (r *shareRun) sentFindings() []store.ShareFinding {
	seqs := map[int64]bool{}
	for _, s := range r.b.Steps {
		seqs[s.Seq] = true
	}
	turns := map[string]bool{}
	for _, t := range r.b.Turns {
		turns[fmt.Sprintf("turns[%d].", r.turnAt[t.ID])] = true
	}
	sent := func(place string) bool {
		if seq, _, ok := redact.StepPlace(place); ok {
			return seqs[seq]
		}
		if i := strings.Index(place, "]."); strings.HasPrefix(place, "turns[") && i > 0 {
			return turns[place[:i+2]]
		}
		for _, p := range []string{"session.agent.", "session.workspace.", "session.source", "segments[", "actors["} {
			if strings.HasPrefix(place, p) {
				return true
			}
		}
		return false // the title, report, notes, usage and owner are not sent
	}
	var out []store.ShareFinding
	for _, f := range r.m.Findings() {
		sf := store.ShareFinding{Rule: f.Rule, Confidence: string(f.Confidence), Placeholder: f.Placeholder}
		for _, w := range f.Where {
			if sent(w) {
				sf.Where = append(sf.Where, w)
			}
		}
		if len(sf.Where) > 0 && !f.Kept {
			out = append(out, sf)
		}
	}
	return out
}

// mergeManifest adds the findings of a batch to a share's manifest: one
// entry per placeholder, with every place it was sent from.
func mergeManifest(m, add []store.ShareFinding) []store.ShareFinding {
	for _, f := range add {
		i := slices.IndexFunc(m, func(g store.ShareFinding) bool { return g.Placeholder == f.Placeholder })
		if i < 0 {
			m = append(m, store.ShareFinding{Rule: f.Rule, Confidence: f.Confidence, Placeholder: f.Placeholder})
			i = len(m) - 1
		}
		if f.Confidence == string(redact.Definite) {
			m[i].Confidence = f.Confidence
		}
		for _, w := range f.Where {
			if !slices.Contains(m[i].Where, w) {
				m[i].Where = append(m[i].Where, w)
			}
		}
	}
	return m
}

// maskedSummary is ", masked: 2 aws-access-key, 1 github-token" for a
// manifest, or nothing.
func maskedSummary(m []store.ShareFinding) string {
	counts := map[string]int{}
	for _, f := range m {
		counts[f.Rule]++
	}
	var parts []string
	for _, rule := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[rule], rule))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; masked " + strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func jsonSize(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// deleteTeamCopies deletes the copies of session id on the team servers it
// was shared with (DELETE URL/api/sessions/ID with the team token), and
// records each as gone so it is never shared there again.
func deleteTeamCopies(ctx context.Context, st *store.Store, shares []store.Share, tokenFile string, out io.Writer) error {
	token, err := readTeamToken(tokenFile)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: time.Minute}
	var errs []error
	for _, sh := range shares {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, sh.Target+"/api/sessions/"+url.PathEscape(sh.SessionID), nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete the team copy on %s: %w", sh.Target, err))
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			fmt.Fprintf(out, "deleted the team copy on %s\n", sh.Target)
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
			fmt.Fprintf(out, "the team copy on %s was gone already\n", sh.Target)
		default:
			errs = append(errs, fmt.Errorf("delete the team copy on %s: the team server answered %d: %s", sh.Target, resp.StatusCode, strings.TrimSpace(string(msg))))
			continue
		}
		sh.Gone = true
		if err := st.SaveShare(ctx, sh); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// askYes asks question on out and reads the answer from in: only y or yes
// is yes.
func askYes(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
