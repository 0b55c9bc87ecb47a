package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestRun_SignalledWhileStarting: a signal that comes while `spyder run`
// is still opening its queue or seeding it is the stop the user asked for,
// as one that comes later is: it exits 0 and logs the stop, not a "context
// canceled" error with status 1.
func TestRun_SignalledWhileStarting(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := tryApp(signalled(t), "run", "--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t),
		"--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatalf("run signalled while starting: %v, want a clean stop\n%s", err, stderr)
	}
	checkStartStop(t, stderr)
}

// TestRun_SignalledWhileStarting_Standalone: the same on a new bbolt file,
// which is kept, as after a later Ctrl-C: it exits 130 (interrupted with
// work left, not a failure's 1), and running the same command again crawls
// every host of --domains from it.
func TestRun_SignalledWhileStarting_Standalone(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "spyder.db")
	args := []string{"run", "--db", db, "--domains", mustDomains(t, []string{"a.example.com", "b.example.com", "c.example.com"}),
		"--out", filepath.Join(dir, "out.jsonl"), "--fake-probe"}
	_, stderr, err := tryApp(signalled(t), args...)
	if code := exitCode(err); err == nil || code != exitInterrupted {
		t.Fatalf("run signalled while starting: %v (exit %d), want exit %d\n%s", err, code, exitInterrupted, stderr)
	}
	checkStartStop(t, stderr)
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("the bbolt file after a signalled start: %v, want it kept", err)
	}
	_, stderr, err = tryApp(t.Context(), args...)
	if err != nil {
		t.Fatalf("run again: %v\n%s", err, stderr)
	}
	if stops := logLines(stderr, "stop"); len(stops) != 1 || stops[0]["done"] != 3.0 {
		t.Errorf("stop log lines of the second run = %v, want one with done=3\n%s", stops, stderr)
	}
}

// signalled is a context already cancelled: the signal, before the queue
// answers.
func signalled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// checkStartStop checks that stderr logs one stop, during the start and
// signalled.
func checkStartStop(t *testing.T, stderr string) {
	t.Helper()
	stops := logLines(stderr, "stop")
	if len(stops) != 1 || stops[0]["during"] != "start" || stops[0]["signalled"] != true {
		t.Errorf("stop log lines = %v, want one with during=start, signalled=true\n%s", stops, stderr)
	}
}
