package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/agentreview/service/redact"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// exportSession is GET /api/sessions/:id/export: the redacted report as a
// download. The rendered bytes are scanned again; if any definite rule
// still matches, nothing is sent.
func exportSession(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := st.Detail(r.Context(), httprouter.ParamsFromContext(r.Context()).ByName("id"), store.DetailQuery{})
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		masked, m := redactSession(d)
		page, err := renderExport(r, masked, m, time.Now())
		if err != nil {
			log.Error("export withheld", "session", d.ID, "err", err)
			writeJSON(w, http.StatusInternalServerError, errorBody{Error: "export withheld: the report could not be made safe to share"})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="session-`+fileSafe(d.ID)+`.html"`)
		w.Write(page)
	})
}

// renderExport renders an already masked session and refuses the result if
// a definite secret rule matches anywhere in its bytes.
func renderExport(r *http.Request, masked store.SessionDetail, m *redact.Masker, now time.Time) ([]byte, error) {
	p := views.ExportPage{Session: sessionView(masked, 0), Generated: now.UTC().Format("2006-01-02 15:04 UTC")}
	for rule, n := range m.Counts() {
		p.Manifest = append(p.Manifest, views.ManifestRow{Rule: rule, Count: n})
	}
	slices.SortFunc(p.Manifest, func(a, b views.ManifestRow) int { return strings.Compare(a.Rule, b.Rule) })
	var buf bytes.Buffer
	if err := views.Export(p).Render(r.Context(), &buf); err != nil {
		return nil, err
	}
	if rule, found := redact.FirstDefinite(buf.String()); found {
		return nil, fmt.Errorf("rule %s still matches the rendered report", rule)
	}
	return buf.Bytes(), nil
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileSafe(id string) string { return unsafeFileChars.ReplaceAllString(id, "_") }

// exportReview is GET /api/sessions/:id/export/review: every value the
// download masks, found by the same pass that masks it.
func exportReview(st Reader, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rv, err := storeSource{st}.Review(r.Context(), httprouter.ParamsFromContext(r.Context()).ByName("id"))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		writeJSON(w, http.StatusOK, rv)
	})
}

// Review is the answer of the export review route.
type Review struct {
	SessionID string          `json:"session_id"`
	Findings  []ReviewFinding `json:"findings"`
	Counts    map[string]int  `json:"counts"` // distinct values per rule
}

// ReviewFinding is one distinct value the export masks.
type ReviewFinding struct {
	Rule        string        `json:"rule"`
	Confidence  string        `json:"confidence"` // definite or candidate
	Placeholder string        `json:"placeholder"`
	Preview     string        `json:"preview"` // only the ends of the value
	Where       []ReviewPlace `json:"where"`
}

// ReviewPlace is where a value was seen: a step (by seq) and field, or a
// field of the session.
type ReviewPlace struct {
	Seq   *int64 `json:"seq,omitempty"`
	Field string `json:"field"`
}

func reviewOf(id string, m *redact.Masker) Review {
	rv := Review{SessionID: id, Findings: []ReviewFinding{}, Counts: m.Counts()}
	for _, f := range m.Findings() {
		rf := ReviewFinding{Rule: f.Rule, Confidence: string(f.Confidence), Placeholder: f.Placeholder, Preview: f.Preview}
		for _, w := range f.Where {
			rf.Where = append(rf.Where, parsePlace(w))
		}
		rv.Findings = append(rv.Findings, rf)
	}
	return rv
}

// Places are labelled "step <seq> <field>" or "<field>" for the masker.
func stepPlace(seq int64, field string) string {
	return "step " + strconv.FormatInt(seq, 10) + " " + field
}

func parsePlace(label string) ReviewPlace {
	if rest, ok := strings.CutPrefix(label, "step "); ok {
		if seqText, field, ok := strings.Cut(rest, " "); ok {
			if seq, err := strconv.ParseInt(seqText, 10, 64); err == nil {
				return ReviewPlace{Seq: &seq, Field: field}
			}
		}
	}
	return ReviewPlace{Field: label}
}

// redactSession masks every text of a session, and returns the masked
// copy and the masker that holds what it found. The review and the
// download both come from here, so they cannot disagree.
func redactSession(d store.SessionDetail) (store.SessionDetail, *redact.Masker) {
	home, _ := os.UserHomeDir()
	m := redact.NewMasker(home)
	mask := func(s *string, where string) {
		if s != nil && *s != "" {
			*s = m.Mask(*s, where)
		}
	}
	maskJSON := func(raw *json.RawMessage, where string) {
		if len(*raw) == 0 {
			return
		}
		masked := m.Mask(string(*raw), where)
		if !json.Valid([]byte(masked)) {
			b, _ := json.Marshal(masked) // keep it valid JSON: the masked text as a string
			masked = string(b)
		}
		*raw = json.RawMessage(masked)
	}
	mask(&d.Summary.Title, "session.title")
	mask(&d.Workspace.Root, "session.workspace.root")
	mask(&d.Workspace.Repo, "session.workspace.repo")
	mask(&d.Source, "session.source")
	for i := range d.Segments {
		for j := range d.Segments[i].SourceFiles {
			mask(&d.Segments[i].SourceFiles[j], fmt.Sprintf("segments[%d].source_files", i))
		}
	}
	for i := range d.Actors {
		mask(&d.Actors[i].Label, fmt.Sprintf("actors[%d].label", i))
	}
	for i := range d.Steps {
		s := &d.Steps[i]
		at := func(field string) string { return stepPlace(s.Seq, field) }
		if s.Error != nil {
			mask(&s.Error.Message, at("error.message"))
		}
		for j := range s.Flags {
			mask(&s.Flags[j].Reason, at("flags.reason"))
		}
		p := &s.Payload
		// In a fixed order: placeholders are numbered by first appearance.
		mask(p.Command, at("payload.command"))
		mask(p.Cwd, at("payload.cwd"))
		mask(p.Stdout, at("payload.stdout"))
		mask(p.Stderr, at("payload.stderr"))
		mask(p.OutputRef, at("payload.output_ref"))
		mask(&p.Path, at("payload.path"))
		mask(p.OldString, at("payload.old_string"))
		mask(p.NewString, at("payload.new_string"))
		mask(p.Text, at("payload.text"))
		mask(p.TextRef, at("payload.text_ref"))
		maskJSON(&p.StructuredPatch, at("payload.structured_patch"))
		maskJSON(&p.Raw, at("payload.raw"))
	}
	// The report groups by path and command; masking is deterministic, so
	// masking the grouped values equals grouping the masked ones.
	for i := range d.Report.Files {
		mask(&d.Report.Files[i].Path, "report.files.path")
	}
	for i := range d.Report.Commands {
		mask(&d.Report.Commands[i].Command, "report.commands.command")
	}
	return d, m
}
