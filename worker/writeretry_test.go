package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store/redisstore"
)

// TestLoop_WriteWaitsOutRedisRestart: output whose seen-set marks cannot
// reach Redis (it is down) is written again once Redis is back, each time
// with a write_retry line naming the host, instead of failing the host:
// every host is done, none failed, and each host's node is in the output.
//
// The probes' writes are held until Redis is down, and Redis comes back
// only after one of them failed: on a loaded machine the probes may take
// any time to finish, and the test is about the writes that meet the
// outage.
func TestLoop_WriteWaitsOutRedisRestart(t *testing.T) {
	t.Parallel()
	srv, c, q := startRestartableRedis(t)
	var out bytes.Buffer
	s, _ := sink.NewJSONSink(&out, sink.FormatLines)
	const hosts = 20
	f := newLoopFixtureWith(t, q, redisstore.NewEmitted(c, "spyder:queue"),
		crawltest.Options{Hosts: hosts, Seed: 27, HTTPLatency: 400 * time.Millisecond}, hosts, &lockedSink{s: s}, 10*time.Second)
	f.l.cfg.Concurrency = hosts
	f.l.cfg.LeaseTTL = 30 * time.Second // past the test: a write given up on would stall it
	gate := &gatedWriter{Writer: f.l.out, gate: newGate(t)}
	f.l.out = gate

	runThroughOutage(t, f, srv, func() bool { return f.stats(t).Processing >= hosts/2 }, "a write failing with Redis down", func() bool {
		gate.open() // Redis is down now
		return gate.failed.Load() > 0
	}, nil)
	if n := strings.Count(f.logs.String(), `"msg":"write_retry"`); n == 0 {
		t.Errorf("no write_retry line; want one for each host whose output waited Redis out\n%s", f.logs)
	}
	for _, msg := range []string{"host_failed", "item_dead", "ack_error"} {
		if n := strings.Count(f.logs.String(), `"msg":"`+msg+`"`); n > 0 {
			t.Errorf("%d %s lines, want 0: the writes were to wait Redis out\n%s", n, msg, f.logs)
		}
	}
	if st := f.stats(t); st.Pending != 0 || st.Processing != 0 || st.Dead != 0 || f.l.done.Load() != hosts {
		t.Errorf("stats = %+v with %d done, want all %d hosts done", st, f.l.done.Load(), hosts)
	}
	written := domainNodes(t, out.String())
	for _, h := range f.w.Seeds[:hosts] {
		if !written[h] {
			t.Errorf("host %s has no node in the output", h)
		}
	}
}

// domainNodes decodes output in sink.FormatLines and returns the hosts of
// its domain nodes.
func domainNodes(t *testing.T, text string) map[string]bool {
	t.Helper()
	bs, err := sink.DecodeLines(strings.NewReader(text))
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	got := map[string]bool{}
	for _, b := range bs {
		for _, n := range b.NodesDomain {
			got[string(n.Host)] = true
		}
	}
	return got
}

// TestWaitQueue_LostConnectionRetriedWhenBack: a call that lost its
// connection is tried again even when the queue answers by the time it is
// asked (the outage ended in between, as happens when Redis restarts
// during the call); an error of any other kind, a full disk included, is
// no outage and is not waited on.
func TestWaitQueue_LostConnectionRetriedWhenBack(t *testing.T) {
	t.Parallel()
	f := newLoopFixture(t, crawltest.Options{Hosts: 1, Seed: 28}, 1, &lockedSink{}, time.Second)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	diskFull := &fs.PathError{Op: "write", Path: "out.jsonl", Err: syscall.ENOSPC}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("output: check emitted: %w", refused), true},
		{fmt.Errorf("emitted seen: %w", io.EOF), true},
		{fmt.Errorf("output: %w", diskFull), false},
		{errors.New("output: bad batch"), false},
		{nil, false},
	} {
		if got := f.l.link.waitQueue(t.Context(), c.err); got != c.want {
			t.Errorf("waitQueue(%v) with the queue answering = %v, want %v", c.err, got, c.want)
		}
	}
}

// gatedWriter holds every write until its gate opens, then passes it on,
// counting those that fail.
type gatedWriter struct {
	Writer
	*gate
	failed atomic.Int64
}

func (g *gatedWriter) Add(ctx context.Context, r *spyder.Result) error {
	g.wait()
	err := g.Writer.Add(ctx, r)
	if err != nil {
		g.failed.Add(1)
	}
	return err
}
