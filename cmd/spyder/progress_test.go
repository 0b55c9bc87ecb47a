package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/queue"
)

// TestProgressLine checks the operator's line and the rate estimate.
func TestProgressLine(t *testing.T) {
	var r rate
	t0 := time.Unix(1000, 0)
	r.add(t0, 0)
	perSec := r.add(t0.Add(2*time.Second), 100)
	if perSec != 50 {
		t.Errorf("rate = %v, want 50", perSec)
	}
	got := progressLine(100, queue.Stats{Pending: 900, Processing: 100, Dead: 2}, 100, perSec)
	want := "done 100 · pending 900 · in flight 100 · dead 2 · 50.0 hosts/s · ETA 20s"
	if got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	var buf bytes.Buffer
	lw := &lineWriter{w: &buf}
	lw.draw("p1")
	lw.Write([]byte("log\n"))
	lw.draw("p2")
	lw.clear()
	if want := "\r\033[Kp1\r\033[Klog\n\r\033[Kp2\r\033[K"; buf.String() != want {
		t.Errorf("lineWriter wrote %q, want %q", buf.String(), want)
	}
}
