package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestExportMarksSubagentSteps: the export, which streams its steps, marks
// each subagent step with its actor and label, and the JSON detail keeps
// actor_id on each step and the actors list.
func TestExportMarksSubagentSteps(t *testing.T) {
	s := newTestService(t)
	d := importSubagentSample(t, s)
	labels := map[string]string{}
	for _, a := range d.Actors {
		labels[a.ID] = a.Label
	}
	want := map[string]int{}
	for _, st := range d.Steps {
		if st.ActorID != "root" {
			want[st.ActorID]++
		}
	}
	if len(want) != 2 {
		t.Fatalf("sample has steps of %d subagents; want 2", len(want))
	}

	rec := s.get("/api/sessions/" + d.ID + "/export")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET export = %d; want 200", rec.Code)
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range want {
		sel := doc.Find(`details.step[data-actor-type="subagent"][data-actor-id="` + id + `"]`)
		if sel.Length() != n {
			t.Errorf("export marks %d steps of %s; want %d", sel.Length(), id, n)
		}
		wantLabel := labels[id]
		if wantLabel == "compact" {
			wantLabel = "compaction summariser"
		}
		if got := strings.TrimSpace(sel.First().Find(`[data-testid="step-actor"]`).Text()); got != wantLabel {
			t.Errorf("export labels %s %q; want %q", id, got, wantLabel)
		}
	}
	if n := doc.Find(`details.step[data-actor-type="root"] [data-testid="step-actor"]`).Length(); n != 0 {
		t.Errorf("export labels %d main-agent steps; want none", n)
	}

	rec = s.get("/api/sessions/" + d.ID)
	var detail struct {
		Actors []struct{ ID string } `json:"actors"`
		Steps  []struct {
			ActorID string `json:"actor_id"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &detail); err != nil {
		t.Fatalf("GET detail = %d %v", rec.Code, err)
	}
	if len(detail.Actors) != 3 {
		t.Errorf("detail lists %d actors; want 3 (main and two subagents)", len(detail.Actors))
	}
	got := map[string]int{}
	for _, st := range detail.Steps {
		if st.ActorID == "" {
			t.Fatal("a step of the detail has no actor_id")
		}
		if st.ActorID != "root" {
			got[st.ActorID]++
		}
	}
	for id, n := range want {
		if got[id] != n {
			t.Errorf("detail has %d steps of %s; want %d", got[id], id, n)
		}
	}
}
