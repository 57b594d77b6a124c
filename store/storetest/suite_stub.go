package storetest

import (
	"testing"

	"github.com/agentreview/service/store"
)

func testUsage(t *testing.T, s store.Backend)   {}
func testVerdict(t *testing.T, s store.Backend) {}
func testNotes(t *testing.T, s store.Backend)   {}
