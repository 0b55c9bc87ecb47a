package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store"
)

// recordingSink keeps the batches written. fail makes writes fail; gate,
// when set, holds every write until it is closed.
type recordingSink struct {
	mu      sync.Mutex
	batches []*spyder.Batch
	fail    error
	gate    chan struct{}
}

func (s *recordingSink) WriteBatch(ctx context.Context, b *spyder.Batch) error {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.batches = append(s.batches, b)
	return nil
}

func (s *recordingSink) all() []*spyder.Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*spyder.Batch(nil), s.batches...)
}

// result is a probe result for host resolving to 192.0.2.1 and linking to
// targets.
func result(h string, targets ...string) *spyder.Result {
	r := &spyder.Result{
		Host:    host.Name(h),
		Domains: []spyder.DomainNode{{Host: host.Name(h), Apex: host.Name(h), TXT: []string{"txt of " + h}}},
		IPs:     []spyder.IPNode{{IP: "192.0.2.1"}},
		Edges:   []spyder.Edge{{Type: spyder.ResolvesTo, Source: h, Target: "192.0.2.1"}},
		Outcome: spyder.HostOutcome{Host: host.Name(h), Steps: []spyder.StepOutcome{{Step: "dns", Status: "ok"}}},
	}
	for _, t := range targets {
		r.Domains = append(r.Domains, spyder.DomainNode{Host: host.Name(t), Apex: host.Name(t)})
		r.Edges = append(r.Edges, spyder.Edge{Type: spyder.LinksTo, Source: h, Target: t})
	}
	return r
}

// summary lists a batch's records as sorted strings.
func summary(b *spyder.Batch) []string {
	var out []string
	for _, d := range b.NodesDomain {
		out = append(out, "domain "+string(d.Host)+" "+strings.Join(d.TXT, ","))
	}
	for _, n := range b.NodesIP {
		out = append(out, "ip "+n.IP)
	}
	for _, e := range b.Edges {
		out = append(out, e.Type+" "+e.Source+" "+e.Target)
	}
	for _, p := range b.Outcomes {
		out = append(out, "probe "+string(p.Host))
	}
	slices.Sort(out)
	return out
}

func mustAdd(tb testing.TB, b *sink.Batcher, rs ...*spyder.Result) {
	tb.Helper()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Add(context.Background(), r); err != nil {
				tb.Errorf("Add(%s) = %v", r.Host, err)
			}
		}()
	}
	wg.Wait()
}

func TestBatcher_DeduplicatesPerRun(t *testing.T) {
	rec := &recordingSink{}
	b := sink.NewBatcher(rec, &store.MemoryEmitted{}, sink.BatcherConfig{RunID: "r", ProbeID: "p", MaxResults: 2, MaxDelay: 10 * time.Millisecond})
	defer b.Close(context.Background())
	mustAdd(t, b, result("a.com", "x.org"), result("b.com", "x.org", "a.com"))
	// c.com was linked before it is probed: its own node (with TXT) is
	// still emitted; x.org and the shared address are not repeated.
	mustAdd(t, b, result("c.com", "x.org", "a.com"))
	// A host probed again in the run (after a lease expired) repeats only
	// its own edges, which no other host's probe writes: nodes and edges
	// from other sources stay once per run.
	again := result("a.com", "x.org")
	again.Edges = append(again.Edges, spyder.Edge{Type: spyder.InAS, Source: "192.0.2.1", Target: "AS64500"},
		spyder.Edge{Type: spyder.RedirectsTo, Source: "hop.net", Target: "land.org"})
	mustAdd(t, b, again)
	d := result("d.com")
	d.Edges = append(d.Edges, spyder.Edge{Type: spyder.InAS, Source: "192.0.2.1", Target: "AS64500"},
		spyder.Edge{Type: spyder.RedirectsTo, Source: "hop.net", Target: "land.org"})
	mustAdd(t, b, d)

	want := [][]string{
		{
			"LINKS_TO a.com x.org", "LINKS_TO b.com a.com", "LINKS_TO b.com x.org",
			"RESOLVES_TO a.com 192.0.2.1", "RESOLVES_TO b.com 192.0.2.1",
			"domain a.com txt of a.com", "domain b.com txt of b.com", "domain x.org ",
			"ip 192.0.2.1", "probe a.com", "probe b.com",
		},
		{"LINKS_TO c.com a.com", "LINKS_TO c.com x.org", "RESOLVES_TO c.com 192.0.2.1", "domain c.com txt of c.com", "probe c.com"},
		{"IN_AS 192.0.2.1 AS64500", "LINKS_TO a.com x.org", "REDIRECTS_TO hop.net land.org", "RESOLVES_TO a.com 192.0.2.1", "probe a.com"},
		{"RESOLVES_TO d.com 192.0.2.1", "domain d.com txt of d.com", "probe d.com"},
	}
	var got [][]string
	for _, batch := range rec.all() {
		got = append(got, summary(batch))
		if batch.RunID != "r" || batch.ProbeID != "p" || len(batch.BatchID) != 32 || batch.Timestamp == 0 {
			t.Errorf("batch header = %q %q %q %d", batch.RunID, batch.ProbeID, batch.BatchID, batch.Timestamp)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

func TestBatcher_AddWaitsForTheWrite(t *testing.T) {
	rec := &recordingSink{gate: make(chan struct{})}
	b := sink.NewBatcher(rec, &store.MemoryEmitted{}, sink.BatcherConfig{MaxResults: 1})
	defer b.Close(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Add(context.Background(), result("a.com")) }()
	select {
	case err := <-done:
		t.Fatalf("Add returned %v while the sink was still writing", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(rec.gate)
	if err := <-done; err != nil {
		t.Fatalf("Add = %v, want nil", err)
	}
	if n := len(rec.all()); n != 1 {
		t.Errorf("%d batches written, want 1", n)
	}
}

func TestBatcher_FailedWriteMarksNothing(t *testing.T) {
	errDown := errors.New("sink down")
	rec := &recordingSink{fail: errDown}
	b := sink.NewBatcher(rec, &store.MemoryEmitted{}, sink.BatcherConfig{MaxResults: 1})
	defer b.Close(context.Background())
	if err := b.Add(context.Background(), result("a.com", "x.org")); !errors.Is(err, errDown) {
		t.Fatalf("Add = %v, want %v", err, errDown)
	}
	rec.mu.Lock()
	rec.fail = nil
	rec.mu.Unlock()
	mustAdd(t, b, result("a.com", "x.org"))
	batches := rec.all()
	if len(batches) != 1 || len(batches[0].Edges) != 2 {
		t.Fatalf("after a failed write, the retry wrote %v, want both edges again", batches)
	}
}

// TestBatcher_Close checks that every Add either reports its result written
// or fails, and that Close writes what was waiting.
func TestBatcher_Close(t *testing.T) {
	rec := &recordingSink{}
	b := sink.NewBatcher(rec, &store.MemoryEmitted{}, sink.BatcherConfig{MaxResults: 1000, MaxDelay: time.Hour})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked []string
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := string(rune('a'+i)) + ".com"
			err := b.Add(context.Background(), result(h))
			switch {
			case err == nil:
				mu.Lock()
				acked = append(acked, h)
				mu.Unlock()
			case !errors.Is(err, sink.ErrBatcherClosed):
				t.Errorf("Add = %v, want nil or ErrBatcherClosed", err)
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	time.Sleep(50 * time.Millisecond) // let the Adds hand their results over
	if err := b.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	wg.Wait()
	var written []string
	for _, batch := range rec.all() {
		for _, p := range batch.Outcomes {
			written = append(written, string(p.Host))
		}
	}
	slices.Sort(acked)
	slices.Sort(written)
	if diff := cmp.Diff(acked, written); diff != "" {
		t.Errorf("acknowledged vs written (-acked +written):\n%s", diff)
	}
	if len(acked) == 0 {
		t.Errorf("Close wrote nothing of the results waiting")
	}
	if err := b.Add(context.Background(), result("late.com")); !errors.Is(err, sink.ErrBatcherClosed) {
		t.Errorf("Add after Close = %v, want ErrBatcherClosed", err)
	}
}

func TestJSONSink(t *testing.T) {
	batch := &spyder.Batch{
		ProbeID: "p", RunID: "r", BatchID: "b1", Timestamp: 1700000000,
		NodesDomain: []spyder.DomainNode{{Host: "a.com", Apex: "a.com", FirstSeen: 1, LastSeen: 1}},
		NodesIP:     []spyder.IPNode{{IP: "192.0.2.1", FirstSeen: 1, LastSeen: 1}},
		NodesCert:   []spyder.CertNode{},
		Edges: []spyder.Edge{
			{Type: spyder.ResolvesTo, Source: "a.com", Target: "192.0.2.1", ObservedAt: 1, ProbeID: "p", RunID: "r"},
			{Type: spyder.LinksTo, Source: "a.com", Target: "b<&>.org", ObservedAt: 1, ProbeID: "p", RunID: "r"},
		},
	}
	t.Run("batch", func(t *testing.T) {
		var buf bytes.Buffer
		s, err := sink.NewJSONSink(&buf, sink.FormatBatch)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.WriteBatch(t.Context(), batch); err != nil {
				t.Fatal(err)
			}
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
		}
		var got spyder.Batch
		if err := json.Unmarshal([]byte(lines[1]), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*batch, got); diff != "" {
			t.Errorf("decoded batch (-want +got):\n%s", diff)
		}
		for _, field := range []string{`"probe_id":"p"`, `"batch_id":"b1"`, `"nodes_domain":[`, `"nodes_cert":[]`, `"observed_at":1`, `"b<&>.org"`} {
			if !strings.Contains(lines[0], field) {
				t.Errorf("line lacks %s: %s", field, lines[0])
			}
		}
	})
	t.Run("edges", func(t *testing.T) {
		var buf bytes.Buffer
		s, err := sink.NewJSONSink(&buf, sink.FormatEdges)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteBatch(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		want := `{"type":"RESOLVES_TO","source":"a.com","target":"192.0.2.1","observed_at":1,"probe_id":"p","run_id":"r"}` + "\n" +
			`{"type":"LINKS_TO","source":"a.com","target":"b<&>.org","observed_at":1,"probe_id":"p","run_id":"r"}` + "\n"
		if diff := cmp.Diff(want, buf.String()); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		if _, err := sink.NewJSONSink(&bytes.Buffer{}, "xml"); !errors.Is(err, sink.ErrFormat) {
			t.Errorf("NewJSONSink(xml) = %v, want ErrFormat", err)
		}
	})
}
