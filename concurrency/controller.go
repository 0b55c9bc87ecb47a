package concurrency

import (
	"fmt"
	"time"
)

// controller moves the limit one reading at a time: it grows the limit by
// half while throughput follows (a slow start, as TCP's), then by an
// eighth while the process stays healthy and the limit is in use, holds
// when throughput stops following, the process is loaded (scheduler
// latency above SchedHigh) or the CPUs are busy (above CPUHigh: more
// visits at once would only wait longer for a CPU), and cuts it by a
// fifth when the process is overloaded (above SchedCut two readings in a
// row) or its memory nears the ceiling. As TCP grows its window once a
// round trip, it grows the limit at most once per limit's worth of
// visits finished: only then do the visits a growth let in show in the
// throughput and the latency. Counting visits rather than time keeps the
// first growth until the crawl has run for a whole visit, past its
// ramp-up, when the first visits to finish are the quick ones and the
// CPUs are not yet in use.
type controller struct {
	rate      float64       // visits finished a second, smoothed
	visit     time.Duration // how long a visit takes, smoothed
	steady    bool          // throughput stopped following a growth by half
	holdUntil time.Time     // no growth before this
	finished  int64         // visits finished since the limit last moved
	grownAt   float64       // rate when the limit last grew
	flat      int           // growths in a row that throughput did not follow
	hot       int           // overloaded readings in a row
}

// Holds, in visits' times, after the limit was cut or throughput went
// flat.
const (
	holdAfterCut  = 2
	holdAfterFlat = 8
)

// observe counts the visits finished in one reading and smooths its
// throughput and visits' time into c.rate and c.visit.
func (c *controller) observe(done int64, rate float64, visit time.Duration) {
	c.finished += done
	if c.rate == 0 {
		c.rate = rate
	} else {
		c.rate = 0.7*c.rate + 0.3*rate
	}
	if visit > 0 {
		if c.visit == 0 {
			c.visit = visit
		} else {
			c.visit = (7*c.visit + 3*visit) / 10
		}
	}
}

// next returns the limit after reading in, and why it is what it is: a
// cause (a word, a label in /metrics) and a line with the figures.
func (c *controller) next(cfg Config, limit int, why Why, in reading) (int, Why) {
	mem := ceiling(cfg, in.sig)
	if in.sig.SchedP99 > cfg.SchedCut {
		c.hot++
	} else {
		c.hot = 0
	}
	switch {
	case mem > 0 && in.sig.Memory > mem/10*9:
		return c.cut(cfg, limit, in, Why{CauseMemory, fmt.Sprintf("%d MiB of a %d MiB ceiling", in.sig.Memory>>20, mem>>20)})
	case c.hot >= 2: // one reading may be a collection's pause
		return c.cut(cfg, limit, in, Why{CauseSaturated, fmt.Sprintf("scheduler latency p99 %s > %s, cpu %.0f%%",
			ms(in.sig.SchedP99), ms(cfg.SchedCut), 100*in.sig.CPU)})
	case in.saturated: // loaded, not yet harmfully: no growth
		return limit, why
	case in.sig.Busy() >= cfg.CPUHigh:
		return limit, Why{CauseCPU, fmt.Sprintf("cpu %.0f%%, machine %.0f%%", 100*in.sig.CPU, 100*in.sig.MachineCPU)}
	case in.now.Before(c.holdUntil) || c.finished < int64(limit):
		return limit, why // a growth, or a cut, has yet to show
	case limit >= cfg.Max:
		return cfg.Max, Why{CauseMax, fmt.Sprintf("at --concurrency %d", cfg.Max)}
	case in.used < limit*3/4:
		return limit, why // the limit is not what holds the crawl back
	case mem > 0 && in.sig.Memory > mem/10*8:
		return limit, Why{CauseMemory, fmt.Sprintf("%d MiB of a %d MiB ceiling", in.sig.Memory>>20, mem>>20)}
	}
	if !c.steady && c.grownAt > 0 && c.rate < c.grownAt*1.1 {
		c.steady = true // the last growth by half brought less than a tenth
	}
	if c.steady && c.grownAt > 0 && c.rate < c.grownAt*1.02 {
		if c.flat++; c.flat >= 3 {
			c.flat, c.holdUntil = 0, in.now.Add(holdAfterFlat*max(c.visit, time.Second/4))
			return limit, Why{CauseFlat, fmt.Sprintf("throughput flat at %.0f hosts/s", c.rate)}
		}
	} else {
		c.flat = 0
	}
	c.grownAt, c.finished = c.rate, 0
	healthy := Why{CauseHealthy, fmt.Sprintf("scheduler latency p99 %s, cpu %.0f%%, %.0f hosts/s", ms(in.sig.SchedP99), 100*in.sig.CPU, c.rate)}
	if !c.steady {
		return min(cfg.Max, limit*3/2), healthy
	}
	return min(cfg.Max, limit+max(limit/8, 8)), healthy
}

// cut lowers the limit by a fifth below what is in flight, unless more
// than the limit is still in flight from before (the last cut has yet to
// take effect), and holds growth for a while.
func (c *controller) cut(cfg Config, limit int, in reading, why Why) (int, Why) {
	c.steady, c.grownAt, c.flat, c.finished = true, 0, 0, 0
	c.holdUntil = in.now.Add(holdAfterCut * max(c.visit, time.Second/4))
	if in.used > limit {
		why.Detail += " (draining)"
		return limit, why
	}
	return max(cfg.Min, min(limit, in.used)*4/5), why
}

// Why says why the limit is what it is.
type Why struct {
	Cause  string // one of the Cause constants
	Detail string // the figures behind it
}

func (w Why) String() string {
	if w.Detail == "" {
		return w.Cause
	}
	return w.Cause + ": " + w.Detail
}

// Causes of a move of the limit.
const (
	CauseStart     = "start"
	CauseFixed     = "fixed"
	CauseHealthy   = "healthy"   // grown: the process keeps up
	CauseSaturated = "saturated" // cut: runnable goroutines wait for a CPU
	CauseMemory    = "memory"    // cut, or held: memory nears the ceiling
	CauseFlat      = "flat"      // held: throughput stopped following
	CauseCPU       = "cpu"       // held: the process's or the machine's CPUs are busy
	CauseMax       = "max"       // at --concurrency
)
