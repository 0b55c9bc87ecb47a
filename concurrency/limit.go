// Package concurrency holds the limit on how many hosts a probe visits at
// once, and the controller that adapts it to what the machine carries.
//
// A crawl cannot tell a slow host from a probe that waited for its own
// CPU: both time out, and a timeout is written as the host's result. So
// the controller grows the limit while the process's own load signals
// stay healthy, the CPUs have room and throughput follows, and shrinks it as soon as they say
// the process is saturated: the Go scheduler's latency (how long a
// runnable goroutine, such as one whose DNS answer or handshake bytes just
// arrived, waits for a CPU) or the memory the runtime holds nearing its
// ceiling. It also remembers when the process was saturated, so that a
// visit that timed out then can be handed back rather than written.
package concurrency

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Defaults of a Config's zero fields.
const (
	DefaultInterval  = 250 * time.Millisecond
	DefaultSchedHigh = 100 * time.Millisecond
	DefaultSchedCut  = 250 * time.Millisecond
	DefaultCPUHigh   = 0.9
	DefaultMin       = 16
	// DefaultStart is where an adaptive limit starts: the fixed number
	// of visits at once the crawl package measured on 2 cores
	// (crawl.DefaultWorkers), from which the limit moves either way.
	DefaultStart = 1024
)

// Config is how a Limit behaves.
type Config struct {
	Max   int  // the most hosts in flight: --concurrency
	Fixed bool // keep Max, adapt nothing
	Min   int  // the fewest it shrinks to; 0: DefaultMin (at most Max)
	Start int  // where it starts; 0: DefaultStart (at most Max)

	// MemoryLimit is the memory ceiling in bytes the limit respects; 0:
	// the runtime's (GOMEMLIMIT), if set.
	MemoryLimit uint64
	// SchedHigh is the scheduler latency (99th percentile) above which
	// the process counts as saturated: the limit does not grow, and a
	// visit that timed out then is handed back; 0: DefaultSchedHigh.
	SchedHigh time.Duration
	// SchedCut is the scheduler latency above which, two readings in a
	// row, the limit is cut; 0: DefaultSchedCut (at least SchedHigh).
	SchedCut time.Duration
	// CPUHigh is the share of CPU time busy (the process's over its
	// GOMAXPROCS, or the machine's) at and above which the limit does not
	// grow; 0: DefaultCPUHigh.
	CPUHigh  float64
	Interval time.Duration // between readings; 0: DefaultInterval
}

// State is the limit as last set, and why.
type State struct {
	Limit    int
	Why      Why // why it last moved (or holds)
	Signals  Signals
	Rate     float64 // visits finished a second, smoothed
	Inflight int
	Overload int64 // visits handed back because they timed out while saturated
}

// Limit is a counting semaphore whose size a controller adapts (or that
// stays at Max when fixed). It is safe for concurrent use.
type Limit struct {
	cfg   Config
	mu    sync.Mutex
	used  int
	state State
	free  chan struct{} // capacity 1: a slot freed or the limit rose
	tick  chan struct{} // closed by the next reading

	done     int64         // visits finished since the last reading
	took     time.Duration // their time, summed
	lastSat  time.Time     // end of the last interval that was saturated
	overload int64
	probe    *probe
	ctl      controller
}

// New returns a Limit for cfg, at its start; Run adapts it.
func New(cfg Config) *Limit {
	cfg.Max = max(cfg.Max, 1)
	if cfg.Min <= 0 {
		cfg.Min = DefaultMin
	}
	if cfg.Start <= 0 {
		cfg.Start = DefaultStart
	}
	if cfg.SchedHigh <= 0 {
		cfg.SchedHigh = DefaultSchedHigh
	}
	if cfg.SchedCut <= 0 {
		cfg.SchedCut = DefaultSchedCut
	}
	cfg.SchedCut = max(cfg.SchedCut, cfg.SchedHigh)
	if cfg.CPUHigh <= 0 {
		cfg.CPUHigh = DefaultCPUHigh
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	cfg.Min, cfg.Start = min(cfg.Min, cfg.Max), min(max(cfg.Start, cfg.Min), cfg.Max)
	l := &Limit{cfg: cfg, free: make(chan struct{}, 1), tick: make(chan struct{})}
	l.state.Limit, l.state.Why = cfg.Start, Why{Cause: CauseStart}
	if cfg.Fixed {
		l.state.Limit, l.state.Why = cfg.Max, Why{Cause: CauseFixed}
	}
	return l
}

// Adaptive reports whether the limit moves (it is not Config.Fixed).
func (l *Limit) Adaptive() bool { return !l.cfg.Fixed }

// Max is the most the limit may reach: Config.Max.
func (l *Limit) Max() int { return l.cfg.Max }

// Fixed returns a Limit of n that never moves.
func Fixed(n int) *Limit { return New(Config{Max: n, Fixed: true}) }

// Acquire waits for one free slot and takes as many more as are free, up
// to most (at least one); false means ctx ended first.
func (l *Limit) Acquire(ctx context.Context, most int) (int, bool) {
	most = max(most, 1)
	for {
		l.mu.Lock()
		if n := min(l.state.Limit-l.used, most); n > 0 {
			l.used += n
			l.mu.Unlock()
			return n, true
		}
		l.mu.Unlock()
		select {
		case <-l.free:
		case <-ctx.Done():
			return 0, false
		}
	}
}

// Release frees n slots.
func (l *Limit) Release(n int) {
	l.mu.Lock()
	l.used -= n
	l.mu.Unlock()
	l.wake()
}

// Done counts one visit finished after took: the throughput the
// controller follows, the visits it waits for before it grows the limit
// again, and the visits' time it holds for after a cut.
func (l *Limit) Done(took time.Duration) {
	l.mu.Lock()
	l.done++
	l.took += took
	l.mu.Unlock()
}

func (l *Limit) wake() {
	select {
	case l.free <- struct{}{}:
	default:
	}
}

// State returns the limit and why it last moved.
func (l *Limit) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.state
	s.Inflight, s.Overload = l.used, l.overload
	return s
}

// SaturatedSince reports whether the process was saturated at any time
// since start (a visit's start), the interval under way included: it
// waits for that interval's reading (at most two intervals, or until ctx
// ends). A visit that timed out then may have timed out waiting for its
// own process rather than for its host.
func (l *Limit) SaturatedSince(ctx context.Context, start time.Time) bool {
	l.mu.Lock()
	next, known := l.tick, !l.lastSat.IsZero() && l.lastSat.After(start)
	l.mu.Unlock()
	if known {
		return true
	}
	t := time.NewTimer(2 * l.cfg.Interval)
	defer t.Stop()
	select {
	case <-next:
	case <-t.C:
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lastSat.IsZero() && l.lastSat.After(start)
}

// NoteOverload counts a visit handed back because it timed out while the
// process was saturated.
func (l *Limit) NoteOverload() {
	l.mu.Lock()
	l.overload++
	l.mu.Unlock()
}

// Run reads the process's signals every Interval and moves the limit,
// until ctx ends. A fixed Limit still reads them, so that a timeout while
// saturated is known as such. report, when not nil, is called with the
// state after every reading and whether its limit moved: a gauge of the
// limit is then right from the first reading, moved or not.
func (l *Limit) Run(ctx context.Context, report func(s State, moved bool)) {
	l.probe = newProbe()
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s, moved := l.step(now, now.Sub(last)); report != nil {
				report(s, moved)
			}
			last = now
		}
	}
}

// step takes one reading over the interval of length d ending at now and
// moves the limit; it reports the new state and whether the limit moved.
func (l *Limit) step(now time.Time, d time.Duration) (State, bool) {
	sig := l.probe.read()
	l.mu.Lock()
	defer l.mu.Unlock()
	done, took := l.done, l.took
	l.done, l.took = 0, 0
	saturated := sig.SchedP99 > l.cfg.SchedHigh
	if saturated {
		l.lastSat = now
	}
	close(l.tick)
	l.tick = make(chan struct{})
	in := reading{now: now, sig: sig, used: l.used, saturated: saturated}
	var visit time.Duration
	if done > 0 {
		visit = took / time.Duration(done)
	}
	l.ctl.observe(done, float64(done)/d.Seconds(), visit)
	limit, why := l.state.Limit, l.state.Why
	if !l.cfg.Fixed {
		limit, why = l.ctl.next(l.cfg, limit, why, in)
	}
	moved := limit != l.state.Limit
	l.state = State{Limit: limit, Why: why, Signals: sig, Rate: l.ctl.rate, Overload: l.overload}
	if moved {
		defer l.wake()
	}
	s := l.state
	s.Inflight = l.used
	return s, moved
}

// reading is what one step knows.
type reading struct {
	now       time.Time
	sig       Signals
	used      int
	saturated bool
}

// ceiling is the memory ceiling of cfg and the runtime's: the flag's, else
// GOMEMLIMIT's; 0 when neither is set.
func ceiling(cfg Config, sig Signals) uint64 {
	if cfg.MemoryLimit > 0 {
		return cfg.MemoryLimit
	}
	if sig.MemLimit > 0 && sig.MemLimit < 1<<62 {
		return sig.MemLimit
	}
	return 0
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
