package concurrency

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/concurrency/concurrencytest"
)

// TestProbe_MachineCPU: with a goroutine spinning on every CPU, the
// machine's CPUs read as busy (whoever else runs, none is left idle), and
// the reading stays a share.
func TestProbe_MachineCPU(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat: the machine's CPU is not read here")
	}
	p := newProbe()
	stop := make(chan struct{})
	burners := concurrencytest.Burn(runtime.NumCPU(), stop)
	time.Sleep(500 * time.Millisecond)
	s := p.read()
	close(stop)
	burners.Wait()
	if s.MachineCPU < 0.8 || s.MachineCPU > 1 {
		t.Errorf("machine CPU %.2f with every CPU spinning; want between 0.8 and 1", s.MachineCPU)
	}
	if s.Busy() < s.MachineCPU || s.Busy() < s.CPU {
		t.Errorf("Busy() = %.2f, below the process's %.2f or the machine's %.2f", s.Busy(), s.CPU, s.MachineCPU)
	}
}

// TestCPUTimes_Since: a reading older than the last (a counter that went
// back) gives nothing rather than a huge share.
func TestCPUTimes_Since(t *testing.T) {
	if busy, total := (cpuTimes{busy: 150, total: 400}).since(cpuTimes{busy: 100, total: 200}); busy != 50 || total != 200 {
		t.Errorf("since = %d of %d, want 50 of 200", busy, total)
	}
	if _, total := (cpuTimes{busy: 10, total: 20}).since(cpuTimes{busy: 100, total: 200}); total != 0 {
		t.Errorf("since an older reading = %d ticks, want 0", total)
	}
}
