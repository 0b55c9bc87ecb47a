package worker

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/concurrency"
	"github.com/spyder-crawler/spyder/concurrency/concurrencytest"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/sink"
)

// recorder is an output that keeps every result it passes on.
type recorder struct {
	Writer
	mu  sync.Mutex
	got []*spyder.Result
}

func (r *recorder) Add(ctx context.Context, res *spyder.Result) error {
	err := r.Writer.Add(ctx, res)
	if err == nil {
		r.mu.Lock()
		r.got = append(r.got, res)
		r.mu.Unlock()
	}
	return err
}

// TestLoop_StarvedProcessWritesNoTimeout starves the process for real while
// it crawls: one CPU for Go (GOMAXPROCS 1), 16 goroutines spinning on it
// for the first two seconds, and every host of the world leased at once,
// so that their handshakes queue for that CPU past the host timeout. The
// visits that time out while the process is saturated go back to the
// queue without spending an attempt, the limit comes down, and no host is
// written as timed out: the world has no slow host, so any timeout would
// be the process's own (a wait the crawler refused ahead, for the per-host
// rate limit on the world's landing hosts that many redirect to or for a
// crawl-delay, comes from the rate, not from the load: see timedOut).
func TestLoop_StarvedProcessWritesNoTimeout(t *testing.T) {
	// Not parallel: it changes GOMAXPROCS for the whole test binary.
	hosts, burners := 1000, 16
	if raceEnabled { // the race detector slows the process tenfold: fewer hosts starve it as much
		hosts, burners = 150, 8
	}
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatBatch)
	f := newLoopFixture(t, crawltest.Options{Hosts: hosts, Seed: 43}, hosts, &lockedSink{s: s}, 1500*time.Millisecond)
	if err := f.w.Warm(); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Writer: f.l.out}
	f.l.out = rec
	f.l.cfg.Limit = concurrency.New(concurrency.Config{Max: hosts, Start: hosts, Interval: 100 * time.Millisecond})

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	spin := concurrencytest.Burn(burners, stop)
	time.AfterFunc(2*time.Second, func() { close(stop) })
	f.run(t, t.Context())
	spin.Wait()

	lim := f.l.Limit()
	if lim.Overload == 0 {
		t.Errorf("no visit handed back for overload; the starvation did not bite (limit %+v)", lim)
	}
	written := map[string]bool{}
	for _, r := range rec.got {
		written[string(r.Host)] = true
		if timedOut(r) {
			t.Errorf("%s written with a timeout %+v; the world has no slow host", r.Host, r.Outcome.Steps)
		}
	}
	if st := f.stats(t); len(written) != hosts || st.Pending != 0 || st.Processing != 0 || st.Dead != 0 {
		t.Errorf("%d hosts written, queue %+v; want all %d written and none left", len(written), st, hosts)
	}
	if n := len(logLines(f.logs.String(), "requeued_overload")); int64(n) != lim.Overload {
		t.Errorf("%d requeued_overload lines, %d counted; want one line each", n, lim.Overload)
	}
	if total := logLines(f.logs.String(), "requeued_overload_total"); len(total) != 1 || total[0]["count"] != float64(lim.Overload) {
		t.Errorf("requeued_overload_total lines %v; want one with count %d", total, lim.Overload)
	}
	t.Logf("%d visits handed back for overload; limit %d (%s)", lim.Overload, lim.Limit, lim.Why)
}
