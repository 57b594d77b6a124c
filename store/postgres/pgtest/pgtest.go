// Package pgtest gives tests a database of their own on a real PostgreSQL
// server: SERVICE_TEST_POSTGRES names the server (a postgres:// URL whose
// user may create databases). Without it the test is skipped, or fails when
// SERVICE_POSTGRES_TESTS=required (as in CI, .ci/run).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSN creates an empty database for t, dropped when t ends, and returns
// its URL.
func DSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("SERVICE_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("SERVICE_POSTGRES_TESTS") == "required" {
			t.Fatal("SERVICE_TEST_POSTGRES is not set (SERVICE_POSTGRES_TESTS=required)")
		}
		t.Skip("no PostgreSQL: set SERVICE_TEST_POSTGRES=postgres://user:password@127.0.0.1:5432/postgres")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect %s: %v", base, err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("pgtest: connect to drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
