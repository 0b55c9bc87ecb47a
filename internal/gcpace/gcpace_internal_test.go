package gcpace

import (
	"runtime"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name         string
		target, prev uint64
		roots        gcRoots
		want         int
	}{
		{"small heap and stacks: goal at target", 96 * mib, 20 * mib, gcRoots{live: 20 * mib, stacks: 3 * mib, globals: 1 * mib, stackMem: 12 * mib}, 100 * 64 / 24},
		{"live heap a quarter up: goal at target", 96 * mib, 16 * mib, gcRoots{live: 20 * mib, stacks: 3 * mib, globals: 1 * mib, stackMem: 12 * mib}, 100 * 64 / 24},
		{"live heap down: goal at target", 96 * mib, 40 * mib, gcRoots{live: 20 * mib, stacks: 3 * mib, globals: 1 * mib, stackMem: 12 * mib}, 100 * 64 / 24},
		{"live heap growing: Go's default", 96 * mib, 15 * mib, gcRoots{live: 20 * mib, stacks: 3 * mib, globals: 1 * mib, stackMem: 12 * mib}, 100},
		{"first collection: Go's default", 96 * mib, 0, gcRoots{live: 3 * mib, stacks: 1 * mib, stackMem: 1 * mib}, 100},
		{"default goal past target: Go's default", 96 * mib, 45 * mib, gcRoots{live: 45 * mib, stacks: 10 * mib, globals: 1 * mib, stackMem: 33 * mib}, 100},
		{"live heap and stacks past target", 96 * mib, 60 * mib, gcRoots{live: 60 * mib, stacks: 10 * mib, stackMem: 50 * mib}, 100},
		{"live heap at target", 96 * mib, 96 * mib, gcRoots{live: 96 * mib}, 100},
		{"nothing live", 96 * mib, 0, gcRoots{}, 100},
		{"live heap near zero: bounded", 96 * mib, 1 * mib, gcRoots{live: 1 * mib, stackMem: 1 * mib}, maxGCPercent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gcPercent(tt.target, tt.prev, tt.roots); got != tt.want {
				t.Errorf("gcPercent(%d, %d, %+v) = %d, want %d", tt.target, tt.prev, tt.roots, got, tt.want)
			}
		})
	}
}

// TestPacer_SetsAfterEveryGC checks that an armed pacer sets GOGC after a
// collection, again after the next one, and no more once stopped. It
// records what the pacer would set rather than setting it, so that the
// process's pacing is left alone.
func TestPacer_SetsAfterEveryGC(t *testing.T) {
	p := newPacer(1 << 40)
	set := make(chan int, 16)
	p.set = func(g int) int { set <- g; return 100 }
	p.arm()
	for i := range 2 {
		if g := awaitSet(t, set); g < 100 || g > maxGCPercent {
			t.Fatalf("collection %d: pacer set GOGC %d, want 100 to %d", i+1, g, maxGCPercent)
		}
	}
	p.stopped.Store(true)
	collect := func() {
		for range 3 {
			runtime.GC()
		}
		time.Sleep(100 * time.Millisecond) // finalizers run on their own goroutine
	}
	collect()
	if len(set) > 0 {
		<-set // one that passed its check just before the stop
	}
	collect()
	if len(set) > 0 {
		t.Errorf("stopped pacer set GOGC %d more times", len(set))
	}
}

// awaitSet runs collections until the pacer sets a GOGC, and returns it,
// or 0 when it sets none in 5 seconds.
func awaitSet(t *testing.T, set chan int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		select {
		case g := <-set:
			return g
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0
}

// TestPaces checks that the operator's GOGC or GOMEMLIMIT, or a target
// that is not positive, leaves the pacing to Go.
func TestPaces(t *testing.T) {
	for _, tt := range []struct {
		target int64
		env    map[string]string
		want   bool
	}{
		{DefaultTarget, nil, true},
		{DefaultTarget, map[string]string{"GOGC": "100"}, false},
		{DefaultTarget, map[string]string{"GOGC": "off"}, false},
		{DefaultTarget, map[string]string{"GOMEMLIMIT": "1GiB"}, false},
		{DefaultTarget, map[string]string{"GODEBUG": "gctrace=1"}, true},
		{-1, nil, false},
		{0, nil, false},
	} {
		getenv := func(k string) string { return tt.env[k] }
		if got := paces(tt.target, getenv); got != tt.want {
			t.Errorf("paces(%d, %v) = %v, want %v", tt.target, tt.env, got, tt.want)
		}
	}
}
