// Package gcpace paces the garbage collector of a crawling process: it lets
// the heap and goroutine stacks grow to a target between collections where
// Go's default pacing would collect sooner. It tunes the whole process, so
// only a program's main starts it.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// DefaultTarget is the heap and goroutine stacks the collector lets the
// process grow to between cycles when that is more than Go's default
// pacing allows: with Go's default, a crawl at the default concurrency
// keeps some 20 MiB live and collects each time it has allocated about as
// much again, most of it by TLS handshakes that drop it at once.
const DefaultTarget = 96 << 20

// maxGCPercent bounds the GOGC a pacer sets, for a live heap near zero.
const maxGCPercent = 1000

// paceOnce starts the process's one pacer.
var paceOnce sync.Once

// Start starts the process's pacer for target: the heap and stacks may
// grow to target before the collector runs, where Go's default pacing
// would run it sooner (never later than the default where they are
// larger). It does nothing when target is not positive, when GOGC or
// GOMEMLIMIT is set in the environment (the operator's own choice), or
// when a pacer already runs.
func Start(target int64) {
	if paces(target, os.Getenv) {
		paceOnce.Do(func() { newPacer(target).arm() })
	}
}

// paces reports whether a pacer for target runs, given the environment
// getenv reads: not for a target that is not positive, nor when the
// operator chose the collector's pacing with GOGC or GOMEMLIMIT.
func paces(target int64, getenv func(string) string) bool {
	return target > 0 && getenv("GOGC") == "" && getenv("GOMEMLIMIT") == ""
}

// pacer sets GOGC after every collection so that the next one starts
// when the heap and stacks reach target or when Go's default pacing
// (GOGC=100) would start it, whichever is later: where the live heap and
// stacks are large (many probes in flight) the pacing is Go's own, and so
// is the memory a probe holds; where they are small, the collector runs
// less often, and the process holds up to about target rather than about
// twice the live heap. It reads the runtime's figures of the cycle just
// ended, from a finalizer that runs once per cycle (see arm).
type pacer struct {
	target  uint64
	set     func(int) int    // debug.SetGCPercent
	samples []metrics.Sample // live heap, stacks scanned, globals, stack memory
	stopped atomic.Bool
	prev    uint64 // the live heap of the collection before, 0 before the first
}

func newPacer(target int64) *pacer {
	return &pacer{target: uint64(target), set: debug.SetGCPercent, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}}
}

// gcTick is an object nothing refers to, whose finalizer runs after the
// collection that finds it unreachable: the next one. It holds a pointer
// so that it is not a tiny allocation, which shares its block with others
// and may outlive a cycle.
type gcTick struct{ _ *byte }

// arm makes p.afterGC run once the next collection ends.
func (p *pacer) arm() {
	runtime.SetFinalizer(&gcTick{}, func(*gcTick) { p.afterGC() })
}

// afterGC sets GOGC for the cycle ahead and re-arms p, until p is stopped.
func (p *pacer) afterGC() {
	if p.stopped.Load() {
		return
	}
	metrics.Read(p.samples)
	var r gcRoots
	r.live, r.stacks, r.globals, r.stackMem = p.samples[0].Value.Uint64(), p.samples[1].Value.Uint64(),
		p.samples[2].Value.Uint64(), p.samples[3].Value.Uint64()
	p.set(gcPercent(p.target, p.prev, r))
	p.prev = r.live
	p.arm()
}

// gcRoots are the runtime's figures of the collection just ended.
type gcRoots struct {
	live     uint64 // heap marked live
	stacks   uint64 // goroutine stack bytes scanned
	globals  uint64 // global variables scanned
	stackMem uint64 // memory held for goroutine stacks, in use or not
}

// gcPercent returns the GOGC that puts the heap goal of the next cycle
// at target less the stack memory, as the runtime computes the goal:
// live + (live+stacks+globals)×GOGC/100. It is never below Go's default
// of 100 nor above maxGCPercent. Counting the stacks in target keeps the
// pacing Go's own once many probes are in flight: their stacks then take
// much of target. So does a live heap more than a quarter above the one
// before (prev; 0 for none): the crawl is still taking on probes, and
// heap spans filled now, before the stacks they will need have grown,
// would stay with the process once the stacks take memory of their own.
func gcPercent(target, prev uint64, r gcRoots) int {
	used := r.live + r.stackMem
	scanned := r.live + r.stacks + r.globals
	if target <= used || scanned == 0 || r.live > prev+prev/4 {
		return 100
	}
	g := 100 * (target - used) / scanned
	return int(min(max(g, 100), maxGCPercent))
}
