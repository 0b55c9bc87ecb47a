package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

var extras = []queue.Field{
	{Name: "prio", Value: json.RawMessage(`5`)},
	{Name: "tags", Value: json.RawMessage(`["x","y"]`)},
}

func testUnknownFields(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	it := queue.Item{Host: "a.com", TS: 5, Extra: extras}
	if err := q.Load(ctx, []queue.Record{{Kind: queue.KindPending, Item: &it}}); err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	want := func(stage string, l queue.Lease, attempt string) {
		t.Helper()
		raw := `{"host":"a.com","ts":5,"attempt":` + attempt + `,"prio":5,"tags":["x","y"]}`
		if string(l.Raw) != raw {
			t.Errorf("%s: lease Raw = %s, want %s", stage, l.Raw, raw)
		}
		if diff := cmp.Diff(extras, l.Item.Extra); diff != "" {
			t.Errorf("%s: lease Item.Extra (-want +got):\n%s", stage, diff)
		}
	}
	l := mustLeaseOne(t, q, long)
	want("lease", l, "0")
	mustFail(t, q, l, "retry", 5)
	l = mustLeaseOne(t, q, 10*time.Millisecond)
	want("after fail", l, "1")
	reclaimUntil(t, q, 5, 1)
	l = mustLeaseOne(t, q, long)
	want("after reclaim", l, "2")
	if _, err := q.Release(ctx, []queue.Lease{l}); err != nil {
		t.Fatalf("Release() error: %v", err)
	}
	l = mustLeaseOne(t, q, long)
	want("after release", l, "2")
	mustFail(t, q, l, "gone", 3)
	dead, err := q.Dead(ctx, 0)
	if err != nil || len(dead) != 1 || dead[0].Item == nil {
		t.Fatalf("Dead() = %+v, %v; want one decoded item", dead, err)
	}
	if diff := cmp.Diff(extras, dead[0].Item.Extra); diff != "" {
		t.Errorf("dead Item.Extra (-want +got):\n%s", diff)
	}
	var buf bytes.Buffer
	if err := queue.Export(ctx, q, &buf); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	wantLine := `{"kind":"dead","item":{"host":"a.com","ts":5,"attempt":3,"prio":5,"tags":["x","y"]},"error":"gone","at":`
	if !strings.Contains(buf.String(), wantLine) {
		t.Errorf("Export() =\n%s\nwant a line starting %s", buf.String(), wantLine)
	}
}

// buildState gives q every kind of record: pending p1..p3 (in that order),
// processing w1 and w2 (leases returned), dead d1 and d2, and their seen
// hosts.
func buildState(t *testing.T, q queue.Queue) []queue.Lease {
	t.Helper()
	mustSeed(t, q, "d1.x.com", "d2.x.com", "w1.x.com", "w2.x.com", "p1.x.com", "p2.x.com", "p3.x.com")
	for _, l := range mustLease(t, q, 2, long) {
		mustFail(t, q, l, "dead: "+string(l.Item.Host), 1)
	}
	held := mustLease(t, q, 2, long)
	wantCounts(t, q, 3, 2, 2, 7)
	return held
}

func mustDump(tb testing.TB, q queue.Queue) []queue.Record {
	tb.Helper()
	var recs []queue.Record
	err := q.Dump(context.Background(), func(r queue.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		tb.Fatalf("Dump() error: %v", err)
	}
	return recs
}

// canonical puts records in a comparable form: kinds in Dump order, pending
// and dead in their stored order, processing by lease ID and seen by host
// (a set has no order), deadlines at the millisecond.
func canonical(recs []queue.Record) []queue.Record {
	out := slices.Clone(recs)
	rank := map[string]int{queue.KindPending: 0, queue.KindProcessing: 1, queue.KindDead: 2, queue.KindSeen: 3}
	slices.SortStableFunc(out, func(a, b queue.Record) int {
		if d := rank[a.Kind] - rank[b.Kind]; d != 0 {
			return d
		}
		switch a.Kind {
		case queue.KindProcessing:
			return strings.Compare(a.LeaseID, b.LeaseID)
		case queue.KindSeen:
			return strings.Compare(string(a.Host), string(b.Host))
		}
		return 0
	})
	for i := range out {
		if !out[i].Deadline.IsZero() {
			out[i].Deadline = time.UnixMilli(out[i].Deadline.UnixMilli())
		}
	}
	return out
}

func testDumpLoad(t *testing.T, q, q2 queue.Queue) {
	buildState(t, q)
	recs := mustDump(t, q)
	kinds := map[string]int{}
	for _, r := range recs {
		kinds[r.Kind]++
	}
	if diff := cmp.Diff(map[string]int{"pending": 3, "processing": 2, "dead": 2, "seen": 7}, kinds); diff != "" {
		t.Errorf("Dump() record kinds (-want +got):\n%s", diff)
	}
	var pending []string
	for _, r := range recs {
		if r.Kind == queue.KindPending {
			pending = append(pending, string(r.Item.Host))
		}
	}
	if diff := cmp.Diff([]string{"p1.x.com", "p2.x.com", "p3.x.com"}, pending); diff != "" {
		t.Errorf("Dump() pending order (-want +got):\n%s", diff)
	}
	if err := q2.Load(context.Background(), recs); err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	if diff := cmp.Diff(canonical(recs), canonical(mustDump(t, q2))); diff != "" {
		t.Errorf("Dump() after Load differs (-want +got):\n%s", diff)
	}
	wantCounts(t, q2, 3, 2, 2, 7)
}

func testLoadedLease(t *testing.T, q, q2 queue.Queue) {
	ctx := context.Background()
	held := buildState(t, q)
	recs := mustDump(t, q)
	expired := queue.Item{Host: "late.com", TS: 9, Attempt: 1}
	recs = append(recs, queue.Record{Kind: queue.KindProcessing, Item: &expired,
		LeaseID: "expired-lease", Deadline: time.Now().Add(-time.Minute)})
	if err := q2.Load(ctx, recs); err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	// The lease IDs travel with the records: the holder in q can ack in q2.
	mustAck(t, q2, held[0])
	if _, err := q2.Extend(ctx, held[1], long); err != nil {
		t.Errorf("Extend(loaded lease) error: %v", err)
	}
	r, err := q2.Reclaim(ctx, queue.DefaultLeaseTTL, 3)
	if err != nil {
		t.Fatalf("Reclaim() error: %v", err)
	}
	if !cmp.Equal(r.Requeued, []string{"late.com"}) || len(r.Dead) != 0 {
		t.Errorf("Reclaim() after Load = %+v, want only the expired late.com requeued", r)
	}
	wantCounts(t, q2, 4, 1, 2, 7)
}

func testExportImport(t *testing.T, q, q2 queue.Queue) {
	ctx := context.Background()
	buildState(t, q)
	var file1, file2 bytes.Buffer
	if err := queue.Export(ctx, q, &file1); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	n, err := queue.Import(ctx, q2, bytes.NewReader(file1.Bytes()))
	if err != nil {
		t.Fatalf("Import() error: %v", err)
	}
	if n != 14 {
		t.Errorf("Import() = %d records, want 14", n)
	}
	if err := queue.Export(ctx, q2, &file2); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	if diff := cmp.Diff(exportLines(file1.String()), exportLines(file2.String())); diff != "" {
		t.Errorf("export → import → export differs (-first +second):\n%s", diff)
	}
	wantCounts(t, q2, 3, 2, 2, 7)
}

// exportLines splits an export file into its pending and dead lines in
// order, then the rest sorted (processing and seen have no order a backend
// must keep).
func exportLines(s string) []string {
	var pending, rest []string
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if strings.HasPrefix(l, `{"kind":"pending"`) || strings.HasPrefix(l, `{"kind":"dead"`) {
			pending = append(pending, l)
		} else {
			rest = append(rest, l)
		}
	}
	slices.Sort(rest)
	return append(pending, rest...)
}

func testLoadNotEmpty(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	item := func(h string) *queue.Item { return &queue.Item{Host: host.Name(h), TS: 1} }
	load := func(recs ...queue.Record) error { return q.Load(ctx, recs) }
	if err := load(queue.Record{Kind: queue.KindDead, Raw: []byte("junk"), Error: "bad", At: 1}); err != nil {
		t.Fatalf("Load(dead) into empty queue error: %v", err)
	}
	if err := load(queue.Record{Kind: queue.KindPending, Item: item("a.com")}); !errors.Is(err, queue.ErrNotEmpty) {
		t.Errorf("Load() with only a dead item there error = %v, want ErrNotEmpty", err)
	}
	wantCounts(t, q, 0, 0, 1, 0)
	if n, err := q.PurgeDead(ctx); err != nil || n != 1 {
		t.Fatalf("PurgeDead() = %d, %v; want 1, nil", n, err)
	}
	if err := load(queue.Record{Kind: queue.KindProcessing, Item: item("b.com"), LeaseID: "old",
		Deadline: time.Now().Add(-time.Second)}); err != nil {
		t.Fatalf("Load(processing) into empty queue error: %v", err)
	}
	if err := load(queue.Record{Kind: queue.KindSeen, Host: "c.com"}); !errors.Is(err, queue.ErrNotEmpty) {
		t.Errorf("Load() with only a processing item there error = %v, want ErrNotEmpty", err)
	}
	wantCounts(t, q, 0, 1, 0, 0)
	reclaimUntil(t, q, 3, 1)
	mustAck(t, q, mustLeaseOne(t, q, long))
	if err := load(queue.Record{Kind: queue.KindSeen, Host: "c.com"}); err != nil {
		t.Fatalf("Load(seen) into empty queue error: %v", err)
	}
	if err := load(queue.Record{Kind: queue.KindPending, Item: item("d.com")}); !errors.Is(err, queue.ErrNotEmpty) {
		t.Errorf("Load() with only a seen host there error = %v, want ErrNotEmpty", err)
	}
	file := `{"kind":"pending","item":{"host":"e.com","ts":1,"attempt":0}}` + "\n"
	if _, err := queue.Import(ctx, q, strings.NewReader(file)); !errors.Is(err, queue.ErrNotEmpty) {
		t.Errorf("Import() into non-empty queue error = %v, want ErrNotEmpty", err)
	}
	wantCounts(t, q, 0, 0, 0, 1)
}

func testImportBadLine(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	file := strings.Join([]string{
		`{"kind":"pending","item":{"host":"a.com","ts":1,"attempt":0}}`,
		`{"kind":"pending","item":{"host":"-bad-","ts":1,"attempt":0}}`,
		`{"kind":"seen","host":"a.com"}`,
		`{"kind":"bogus"}`,
		`{"kind":"seen","host":"b.com"}`,
	}, "\n")
	_, err := queue.Import(ctx, q, strings.NewReader(file))
	var ie *queue.ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("Import(bad lines) error = %v, want *ImportError", err)
	}
	var lines []int
	for _, l := range ie.Lines {
		lines = append(lines, l.Line)
	}
	if !cmp.Equal(lines, []int{2, 4}) || ie.Total != 2 {
		t.Errorf("ImportError lines = %v (total %d), want [2 4] (total 2)", lines, ie.Total)
	}
	wantCounts(t, q, 0, 0, 0, 0)
	good := strings.Join([]string{
		`{"kind":"pending","item":{"host":"a.com","ts":1,"attempt":0}}`,
		`{"kind":"seen","host":"a.com"}`,
	}, "\n")
	if n, err := queue.Import(ctx, q, strings.NewReader(good)); err != nil || n != 2 {
		t.Errorf("Import(good) = %d, %v; want 2, nil", n, err)
	}
	wantCounts(t, q, 1, 0, 0, 1)
}
