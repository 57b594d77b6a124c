package storetest

import (
	"testing"

	"github.com/agentreview/service/store"
)

func testSearchFields(t *testing.T, s store.Backend)      {}
func testSearchFilters(t *testing.T, s store.Backend)     {}
func testSearchRefused(t *testing.T, s store.Backend)     {}
func testSearchPages(t *testing.T, s store.Backend)       {}
func testSearchAfterDelete(t *testing.T, s store.Backend) {}
func testUsage(t *testing.T, s store.Backend)             {}
func testVerdict(t *testing.T, s store.Backend)           {}
func testNotes(t *testing.T, s store.Backend)             {}
