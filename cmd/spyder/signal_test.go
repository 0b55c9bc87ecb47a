package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestRun_SignalledWhileStarting: a signal that comes while `spyder run`
// is still opening its queue is the stop the user asked for, as one that
// comes later is: it exits 0 and logs the stop, not a "context canceled"
// error with status 1.
func TestRun_SignalledWhileStarting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the signal, before the queue answers
	dir := t.TempDir()
	_, stderr, err := tryApp(ctx, "run", "--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t),
		"--state-dir", filepath.Join(dir, "state"), "--out", filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatalf("run signalled while starting: %v, want a clean stop\n%s", err, stderr)
	}
	stops := logLines(stderr, "stop")
	if len(stops) != 1 || stops[0]["during"] != "start" || stops[0]["signalled"] != true {
		t.Errorf("stop log lines = %v, want one with during=start, signalled=true\n%s", stops, stderr)
	}
}
