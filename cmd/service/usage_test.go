package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageCommand: `service usage` prints the stored usage, its JSON the
// same numbers as the session details, estimated cost marked ≈.
func TestUsageCommand(t *testing.T) {
	withHome(t)
	db := filepath.Join(t.TempDir(), "s.db")
	runImportCmd(t, "claude-code", filepath.Join(samplesDir, "claude-code"), "--db", db)
	want := storedUsage(t, db, "claude-code")

	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"usage", "daily", "--json", "--db", db}, &out, &errOut); err != nil {
		t.Fatalf("usage --json = %v; %s", err, errOut.String())
	}
	var rep struct {
		Rows  []json.RawMessage
		Total struct {
			Tokens struct {
				Input, Output int64
				CacheRead     int64 `json:"cache_read"`
				CacheCreation int64 `json:"cache_creation"`
			}
			APIRequests      int64    `json:"api_requests"`
			EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
			ReportedCostUSD  *float64 `json:"reported_cost_usd"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("usage --json printed %s: %v", out.String(), err)
	}
	tot := rep.Total
	if tot.Tokens.Input != want.tokens.Input || tot.Tokens.Output != want.tokens.Output || tot.Tokens.CacheRead != want.tokens.CacheRead ||
		tot.Tokens.CacheCreation != want.tokens.CacheCreation || tot.APIRequests != want.requests || len(rep.Rows) == 0 {
		t.Errorf("usage --json total = %+v over %d days; the sessions hold %+v", tot, len(rep.Rows), want)
	}
	if tot.EstimatedCostUSD == nil || tot.ReportedCostUSD != nil {
		t.Errorf("costs = estimated %v, reported %v; Claude Code files report no cost, so estimated only", tot.EstimatedCostUSD, tot.ReportedCostUSD)
	}

	out.Reset()
	if err := run(context.Background(), []string{"usage", "--db", db, "--since", "20260211", "--until", "2026-02-11"}, &out, &errOut); err != nil {
		t.Fatalf("usage = %v", err)
	}
	text := out.String()
	if !strings.Contains(text, "Cache Create") || !strings.Contains(text, "2026-02-11") || strings.Contains(text, "2025-10-10") || !strings.Contains(text, "≈ $") {
		t.Errorf("usage printed\n%s\nwant the one day in the period, costs marked ≈", text)
	}
	if err := run(context.Background(), []string{"usage", "--db", db, "--since", "yesterday"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "YYYY-MM-DD") {
		t.Errorf("usage --since yesterday = %v; want an error naming the format", err)
	}
}
