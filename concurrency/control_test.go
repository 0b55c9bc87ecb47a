package concurrency

import (
	"strings"
	"testing"
	"time"
)

// steps feeds readings to a controller from limit and returns the limits
// and causes it chose.
func steps(cfg Config, limit int, in ...rated) ([]int, []string) {
	var c controller
	why := Why{Cause: CauseStart}
	var limits []int
	var causes []string
	for _, r := range in {
		c.observe(r.rate)
		limit, why = c.next(cfg, limit, why, r.reading)
		limits, causes = append(limits, limit), append(causes, why.Cause)
	}
	return limits, causes
}

// reading is a test's reading with the throughput that came with it.
type rated struct {
	reading
	rate float64
}

func TestController_SlowStartThenCut(t *testing.T) {
	cfg := Config{Max: 8192, Min: 16, SchedHigh: 100 * time.Millisecond, SchedCut: 250 * time.Millisecond}
	healthy := func(used int, rate float64) rated {
		return rated{reading{sig: Signals{SchedP99: time.Millisecond}, used: used}, rate}
	}
	hot := func(used int) rated {
		return rated{reading{sig: Signals{SchedP99: 300 * time.Millisecond}, used: used, saturated: true}, 100}
	}
	var c controller
	why := Why{Cause: CauseStart}
	limit := 256
	for _, r := range []rated{healthy(256, 100), healthy(384, 150)} {
		c.observe(r.rate)
		limit, why = c.next(cfg, limit, why, r.reading)
	}
	if limit != 576 || why.Cause != CauseHealthy {
		t.Fatalf("after two healthy readings with the limit in use: %d (%s), want 576 (healthy): a slow start grows by half", limit, why)
	}
	limit, why = c.next(cfg, limit, why, hot(576).reading)
	if limit != 576 {
		t.Errorf("one saturated reading moved the limit to %d; want it held (a collection's pause is one reading)", limit)
	}
	limit, why = c.next(cfg, limit, why, hot(576).reading)
	if limit != 460 || why.Cause != CauseSaturated || !strings.Contains(why.Detail, "300.0ms > 250.0ms") {
		t.Errorf("two saturated readings: %d (%s), want 460 (saturated, with the latency)", limit, why)
	}
	loaded := rated{reading{sig: Signals{SchedP99: 150 * time.Millisecond}, used: 460, saturated: true}, 200}
	if l, _ := c.next(cfg, limit, why, loaded.reading); l != 460 {
		t.Errorf("loaded (150ms) after a cut: %d, want 460 held", l)
	}
	for range holdAfterCut {
		limit, why = c.next(cfg, limit, why, healthy(460, 200).reading)
	}
	if limit != 460 {
		t.Errorf("limit %d during the hold after a cut, want 460", limit)
	}
	limit, _ = c.next(cfg, limit, why, healthy(460, 200).reading)
	if limit != 460+460/8 {
		t.Errorf("after the hold: %d, want %d: steady growth is by an eighth", limit, 460+460/8)
	}
}

func TestController_Holds(t *testing.T) {
	cfg := Config{Max: 1000, Min: 16, SchedHigh: 100 * time.Millisecond, SchedCut: 250 * time.Millisecond}
	ok := reading{sig: Signals{SchedP99: time.Millisecond}}
	cases := []struct {
		name  string
		limit int
		in    reading
		want  int
		cause string
	}{
		{"unused", 512, withUsed(ok, 100), 512, CauseStart},
		{"at max", 1000, withUsed(ok, 1000), 1000, CauseMax},
		{"memory near", 512, reading{sig: Signals{Memory: 850 << 20, MemLimit: 1000 << 20}, used: 512}, 512, CauseMemory},
		{"memory over", 512, reading{sig: Signals{Memory: 950 << 20, MemLimit: 1000 << 20}, used: 512}, 409, CauseMemory},
		{"draining", 512, reading{sig: Signals{Memory: 950 << 20, MemLimit: 1000 << 20}, used: 900}, 512, CauseMemory},
		{"floor", 16, reading{sig: Signals{Memory: 950 << 20, MemLimit: 1000 << 20}, used: 16}, 16, CauseMemory},
	}
	for _, c := range cases {
		got, causes := steps(cfg, c.limit, rated{c.in, 10})
		if got[0] != c.want || causes[0] != c.cause {
			t.Errorf("%s: %d (%s), want %d (%s)", c.name, got[0], causes[0], c.want, c.cause)
		}
	}
	flag := Config{Max: 1000, Min: 16, MemoryLimit: 100 << 20, SchedCut: time.Second}
	if got, causes := steps(flag, 512, rated{reading{sig: Signals{Memory: 95 << 20, MemLimit: 1 << 62}, used: 512}, 10}); got[0] != 409 || causes[0] != CauseMemory {
		t.Errorf("--memory-limit: %d (%s), want 409 (memory)", got[0], causes[0])
	}
}

// TestController_FlatThroughput: growth that throughput does not follow
// stops for a while.
func TestController_FlatThroughput(t *testing.T) {
	cfg := Config{Max: 100_000, Min: 16, SchedHigh: 100 * time.Millisecond, SchedCut: 250 * time.Millisecond}
	c := controller{steady: true}
	why := Why{Cause: CauseHealthy}
	limit := 1000
	var causes []string
	for range 5 {
		c.observe(500)
		limit, why = c.next(cfg, limit, why, withUsed(reading{sig: Signals{SchedP99: time.Millisecond}}, limit))
		causes = append(causes, why.Cause)
	}
	if causes[len(causes)-1] != CauseFlat {
		t.Errorf("causes %v with throughput flat at 500/s; want flat at the end", causes)
	}
	held := limit
	limit, _ = c.next(cfg, limit, why, withUsed(reading{sig: Signals{SchedP99: time.Millisecond}}, limit))
	if limit != held {
		t.Errorf("limit %d after flat, want it held at %d", limit, held)
	}
}

func withUsed(r reading, n int) reading { r.used = n; return r }
