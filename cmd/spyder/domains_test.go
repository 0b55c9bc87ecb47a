package main

import (
	"strings"
	"testing"
)

// TestApp_SeedLongBadLineReason: a line over 80 bytes that is not a host is
// logged with the reason alone, not the reason behind a copy of the input
// (the input is logged, clipped, in its own field).
func TestApp_SeedLongBadLineReason(t *testing.T) {
	t.Parallel()
	long := "a!." + strings.Repeat("a", 100) + ".com"
	path := mustFile(t, "long.txt", []byte("good.example.com\n"+long+"\n"))
	db := t.TempDir() + "/spyder.db"
	_, stderr, err := tryApp(t.Context(), "queue", "seed", "--db", db, path)
	if err != nil {
		t.Fatalf("queue seed: %v\n%s", err, stderr)
	}
	lines := logLines(stderr, "domain_rejected")
	if len(lines) != 1 {
		t.Fatalf("%d domain_rejected lines, want 1:\n%s", len(lines), stderr)
	}
	if got, want := lines[0]["reason"], "bad character '!'"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	if got, want := lines[0]["input"], long[:80]+"…"; got != want {
		t.Errorf("input = %q, want the line clipped to 80 bytes, %q", got, want)
	}
}
