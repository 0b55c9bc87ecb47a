package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/queue"
)

// TestProgressLine_Limit: the line shows the concurrency limit beside
// the hosts in flight, with why it is what it is, and the visits handed
// back for overload once there are some.
func TestProgressLine_Limit(t *testing.T) {
	st := queue.Stats{Pending: 800, Processing: 100, Seen: 1000}
	lim := concurrency.State{Limit: 640, Why: concurrency.Why{Cause: concurrency.CauseSaturated, Detail: "scheduler latency p99 134ms > 100ms"}}
	want := "done 100/1000 (10.0%) · pending 800 · in flight 100/640 (saturated) · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA 18s"
	if got := progressLine(st, 100, lim, 40, 50, 65*time.Second); got != want {
		t.Errorf("progressLine =\n%s\nwant\n%s", got, want)
	}
	lim.Overload = 12
	want = "done 100/1000 (10.0%) · pending 800 · in flight 100/640 (saturated) · requeued 12 · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA 18s"
	if got := progressLine(st, 100, lim, 40, 50, 65*time.Second); got != want {
		t.Errorf("progressLine =\n%s\nwant\n%s", got, want)
	}
}

// TestProgressLine checks the operator's line: done out of the total with
// a percentage, the elapsed time, and an ETA that is never "0s" while
// hosts are in flight.
func TestProgressLine(t *testing.T) {
	cases := []struct {
		name     string
		st       queue.Stats
		inflight int
		all      float64
		want     string
	}{
		{"mid crawl", queue.Stats{Pending: 800, Processing: 100, Dead: 2, Seen: 1000}, 100, 50,
			"done 98/1000 (9.8%) · pending 800 · in flight 100 · dead 2 · 40.0 hosts/s · elapsed 1m5s · ETA 18s"},
		{"slow tail", queue.Stats{Processing: 3, Seen: 1000, OldestLeaseAge: 6 * time.Second}, 3, 0.1,
			"done 997/1000 (99.7%) · pending 0 · in flight 3 · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA finishing 3 in flight (oldest 6s)"},
		{"one host left, fast rate", queue.Stats{Pending: 1, Seen: 1000}, 0, 500,
			"done 999/1000 (99.9%) · pending 1 · in flight 0 · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA 1s"},
		{"no rate yet", queue.Stats{Pending: 10, Seen: 10}, 0, 0,
			"done 0/10 (0.0%) · pending 10 · in flight 0 · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA -"},
		{"finished", queue.Stats{Seen: 10}, 0, 3,
			"done 10/10 (100.0%) · pending 0 · in flight 0 · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA 0s"},
		{"hand-pushed items beyond the seen set", queue.Stats{Pending: 5, Seen: 2}, 0, 1,
			"done 0/5 (0.0%) · pending 5 · in flight 0 · dead 0 · 40.0 hosts/s · elapsed 1m5s · ETA 5s"},
	}
	for _, c := range cases {
		if got := progressLine(c.st, c.inflight, concurrency.State{}, 40, c.all, 65*time.Second+300*time.Millisecond); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestLineWriter: a log line clears the progress line, which the next
// tick draws again.
func TestLineWriter(t *testing.T) {
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
