package concurrency

import (
	"strings"
	"testing"
	"time"
)

// tick is the time between two readings in these tests, and how long a
// visit takes: every visit in flight finishes within a reading, so the
// limit may grow at every reading it is in use.
const tick = 250 * time.Millisecond

// feeder feeds readings to a controller, a tick apart.
type feeder struct {
	c     controller
	cfg   Config
	limit int
	why   Why
	now   time.Time
}

func newFeeder(cfg Config, limit int) *feeder {
	return &feeder{cfg: cfg, limit: limit, why: Why{Cause: CauseStart}, now: time.Unix(1000, 0)}
}

// feed gives the controller one reading of sched latency p99, used slots
// (as many visits finished) and throughput rate, and returns the limit and
// why.
func (f *feeder) feed(sched time.Duration, used int, rate float64) (int, Why) {
	return f.feedSig(Signals{SchedP99: sched}, used, rate)
}

func (f *feeder) feedSig(sig Signals, used int, rate float64) (int, Why) {
	f.now = f.now.Add(tick)
	f.c.observe(int64(used), rate, tick)
	in := reading{now: f.now, sig: sig, used: used, saturated: sig.SchedP99 > f.cfg.SchedHigh}
	f.limit, f.why = f.c.next(f.cfg, f.limit, f.why, in)
	return f.limit, f.why
}

var testCfg = Config{Max: 8192, Min: 16, SchedHigh: 100 * time.Millisecond, SchedCut: 250 * time.Millisecond, CPUHigh: 0.9}

func TestController_SlowStartThenCut(t *testing.T) {
	f := newFeeder(testCfg, 256)
	f.feed(time.Millisecond, 256, 100)
	limit, why := f.feed(time.Millisecond, 384, 150)
	if limit != 576 || why.Cause != CauseHealthy {
		t.Fatalf("after two healthy readings with the limit in use and throughput following: %d (%s), want 576 (healthy): a slow start grows by half", limit, why)
	}
	if limit, _ = f.feed(300*time.Millisecond, 576, 100); limit != 576 {
		t.Errorf("one overloaded reading moved the limit to %d; want it held (a collection's pause is one reading)", limit)
	}
	limit, why = f.feed(300*time.Millisecond, 576, 100)
	if limit != 460 || why.Cause != CauseSaturated || !strings.Contains(why.Detail, "300.0ms > 250.0ms") {
		t.Errorf("two overloaded readings: %d (%s), want 460 (saturated, with the latency)", limit, why)
	}
	if limit, _ = f.feed(150*time.Millisecond, 460, 200); limit != 460 {
		t.Errorf("loaded (150 ms) after a cut: %d, want 460 held", limit)
	}
	held := 1 // the loaded reading
	for limit == 460 && held < 20 {
		limit, _ = f.feed(time.Millisecond, 460, 200)
		held++
	}
	if held < holdAfterCut || limit != 460+460/8 {
		t.Errorf("after a cut: held %d readings, then %d; want at least %d (two visits' time), then %d: growth by an eighth",
			held, limit, holdAfterCut, 460+460/8)
	}
}

// TestController_SlowStartEnds: once a growth by half brings less than a
// tenth more throughput, growth goes on by an eighth.
func TestController_SlowStartEnds(t *testing.T) {
	f := newFeeder(testCfg, 256)
	f.feed(time.Millisecond, 256, 100)
	if limit, _ := f.feed(time.Millisecond, 384, 105); limit != 384+384/8 {
		t.Errorf("a growth by half that brought 5%% more: %d, want %d", limit, 384+384/8)
	}
}

// TestController_GrowsOncePerLimitOfVisits: the limit grows at most once
// per limit's worth of visits finished, as TCP grows its window once a
// round trip, so that a growth shows before the next; and the first
// growth waits for as many, past the crawl's ramp-up.
func TestController_GrowsOncePerLimitOfVisits(t *testing.T) {
	f := newFeeder(testCfg, 256)
	var limits []int
	for i := range 12 {
		f.now = f.now.Add(tick)
		f.c.finished += 64
		f.c.rate = float64(100 * (i + 1))
		in := reading{now: f.now, sig: Signals{SchedP99: time.Millisecond}, used: f.limit}
		f.limit, f.why = f.c.next(f.cfg, f.limit, f.why, in)
		limits = append(limits, f.limit)
	}
	want := []int{256, 256, 256, 384, 384, 384, 384, 384, 384, 576, 576, 576}
	for i := range want {
		if limits[i] != want[i] {
			t.Fatalf("limits %v with 64 visits finished a reading; want %v", limits, want)
		}
	}
}

func TestController_Holds(t *testing.T) {
	mem := func(used, limit uint64) Signals {
		return Signals{SchedP99: time.Millisecond, Memory: used << 20, MemLimit: limit << 20}
	}
	cfg := testCfg
	cfg.Max = 1000
	cases := []struct {
		name  string
		limit int
		sig   Signals
		used  int
		want  int
		cause string
	}{
		{"unused", 512, Signals{SchedP99: time.Millisecond}, 100, 512, CauseStart},
		{"loaded", 512, Signals{SchedP99: 150 * time.Millisecond}, 512, 512, CauseStart},
		{"machine busy", 512, Signals{SchedP99: time.Millisecond, CPU: 0.4, MachineCPU: 0.95}, 512, 512, CauseCPU},
		{"process busy", 512, Signals{SchedP99: time.Millisecond, CPU: 0.92}, 512, 512, CauseCPU},
		{"cpu to spare", 512, Signals{SchedP99: time.Millisecond, CPU: 0.5, MachineCPU: 0.85}, 512, 768, CauseHealthy},
		{"at max", 1000, Signals{SchedP99: time.Millisecond}, 1000, 1000, CauseMax},
		{"memory near", 512, mem(850, 1000), 512, 512, CauseMemory},
		{"memory over", 512, mem(950, 1000), 512, 409, CauseMemory},
		{"draining", 512, mem(950, 1000), 900, 512, CauseMemory},
		{"floor", 16, mem(950, 1000), 16, 16, CauseMemory},
	}
	for _, c := range cases {
		got, why := newFeeder(cfg, c.limit).feedSig(c.sig, c.used, 10)
		if got != c.want || why.Cause != c.cause {
			t.Errorf("%s: %d (%s), want %d (%s)", c.name, got, why, c.want, c.cause)
		}
	}
	flag := cfg
	flag.MemoryLimit = 100 << 20
	if got, why := newFeeder(flag, 512).feedSig(Signals{Memory: 95 << 20, MemLimit: 1 << 62}, 512, 10); got != 409 || why.Cause != CauseMemory {
		t.Errorf("--memory-limit: %d (%s), want 409 (memory)", got, why)
	}
}

// TestController_FlatThroughput: growth that throughput does not follow
// stops for a while.
func TestController_FlatThroughput(t *testing.T) {
	f := newFeeder(testCfg, 1000)
	f.c.steady = true
	var causes []string
	for range 5 {
		_, why := f.feed(time.Millisecond, f.limit, 500)
		causes = append(causes, why.Cause)
	}
	if causes[len(causes)-1] != CauseFlat {
		t.Errorf("causes %v with throughput flat at 500/s; want flat at the end", causes)
	}
	held := f.limit
	if limit, _ := f.feed(time.Millisecond, f.limit, 500); limit != held {
		t.Errorf("limit %d after flat, want it held at %d", limit, held)
	}
}
