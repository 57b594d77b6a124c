package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

func TestShareRoundTrip(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	mustApply(t, s, newBatch("a"))
	before := mustLatest(t, s)

	got, err := s.Share(ctx, "a", "https://team.example")
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Share{SessionID: "a", Target: "https://team.example"}); !reflect.DeepEqual(got, want) {
		t.Errorf("Share(never shared) = %+v; want %+v", got, want)
	}

	sh := store.Share{
		SessionID: "a", Target: "https://team.example", Stamp: 0, Pending: before,
		PendingSeqs: []int64{1, 2}, Steps: 2, SharedAt: time.UnixMicro(time.Now().UnixMicro()).UTC(),
		Manifest: []store.ShareFinding{{Rule: "aws-access-key", Confidence: "definite", Placeholder: "[aws-access-key-1]", Where: []string{"step 1 payload.text"}}},
	}
	if err := s.SaveShare(ctx, sh); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Share(ctx, "a", sh.Target); !reflect.DeepEqual(got, sh) {
		t.Errorf("Share after SaveShare = %+v; want %+v", got, sh)
	}
	// Saving again updates the row; another target is another row.
	sh.Stamp, sh.Pending, sh.PendingSeqs, sh.Gone = before, 0, nil, true
	if err := s.SaveShare(ctx, sh); err != nil {
		t.Fatal(err)
	}
	other := store.Share{SessionID: "a", Target: "http://127.0.0.1:9", Steps: 1}
	if err := s.SaveShare(ctx, other); err != nil {
		t.Fatal(err)
	}
	all, err := s.Shares(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	sh.PendingSeqs, other.PendingSeqs, other.Manifest = []int64{}, []int64{}, []store.ShareFinding{}
	if want := []store.Share{other, sh}; !reflect.DeepEqual(all, want) {
		t.Errorf("Shares(a) = %+v; want %+v", all, want)
	}
	// Shares are not changes of the session: no stamp moved.
	if after := mustLatest(t, s); after != before {
		t.Errorf("latest stamp after SaveShare = %d; want %d (unchanged)", after, before)
	}
}

func TestShareRules(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	rules := []store.ShareRule{
		{Workspace: "/w/b", Target: "https://t1", TokenFile: "/k1"},
		{Workspace: "/w/a", Target: "https://t1", TokenFile: "/k1"},
		{Workspace: "/w/a", Target: "https://t1", TokenFile: "/k2"}, // the same rule, another token file
	}
	for _, r := range rules {
		if err := s.AddShareRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ShareRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.ShareRule{rules[2], rules[0]}; !reflect.DeepEqual(got, want) {
		t.Errorf("ShareRules = %+v; want %+v", got, want)
	}
}

func TestWorkspaceSessions(t *testing.T) {
	s := mustOpen(t)
	for _, id := range []string{"a", "b"} {
		mustApply(t, s, newBatch(id))
	}
	b := newBatch("c")
	b["session"].(obj)["workspace"] = obj{"root": "/tmp/ws-a"} // header("a")'s root
	mustApply(t, s, b)
	got, err := s.WorkspaceSessions(context.Background(), "/tmp/ws-a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WorkspaceSessions(/tmp/ws-a) = %q; want %q", got, want)
	}
}

func TestChangesOf(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	if _, err := s.ChangesOf(ctx, "a", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ChangesOf(unknown) = %v; want ErrNotFound", err)
	}
	first := newBatch("a")
	mustApply(t, s, first)
	all, err := s.ChangesOf(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, st := range first["steps"].(arr) {
		seqs = append(seqs, int64(st.(obj)["seq"].(int)))
	}
	if !reflect.DeepEqual(all.Seqs, seqs) || !reflect.DeepEqual(all.Turns, []string{"a-t1"}) {
		t.Errorf("ChangesOf(a, 0) = %+v; want seqs %v and turn a-t1", all, seqs)
	}
	if all.Stamp != mustLatest(t, s) {
		t.Errorf("ChangesOf(a, 0).Stamp = %d; want the session's stamp %d", all.Stamp, mustLatest(t, s))
	}

	// A rewritten step and a new one; an identical re-send writes nothing.
	edit := step("a", 2, "command")
	edit["payload"].(obj)["stdout"] = "changed"
	mustApply(t, s, stepsBatch("a", step("a", 1, "message"), edit, step("a", 6, "read")))
	later, err := s.ChangesOf(ctx, "a", all.Stamp)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{2, 6}; !reflect.DeepEqual(later.Seqs, want) || len(later.Turns) != 0 || later.Stamp <= all.Stamp {
		t.Errorf("ChangesOf(a, %d) = %+v; want seqs %v, no turns, a later stamp", all.Stamp, later, want)
	}
	none, err := s.ChangesOf(ctx, "a", later.Stamp)
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Seqs) != 0 || len(none.Turns) != 0 || none.Stamp != later.Stamp {
		t.Errorf("ChangesOf(a, now) = %+v; want nothing changed", none)
	}
}
