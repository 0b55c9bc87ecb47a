package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// probeAll leases every pending host and acks it with outcome[host] as
// its last probe at time at, in one AckAll call, as the run loop does.
func probeAll(tb testing.TB, q queue.Queue, at time.Time, outcome map[string]string) {
	tb.Helper()
	ls := mustLease(tb, q, 100, long)
	ps := make([]queue.Visit, len(ls))
	for i, l := range ls {
		ps[i] = queue.Visit{Host: l.Item.Host, At: at.Unix(), Outcome: outcome[string(l.Item.Host)]}
	}
	ok, err := q.AckAll(context.Background(), ls, ps)
	if err != nil {
		tb.Fatalf("AckAll() error: %v", err)
	}
	if i := slices.Index(ok, false); i >= 0 {
		tb.Fatalf("AckAll() reported the lease of %s lost", ls[i].Item.Host)
	}
}

func mustQueued(tb testing.TB, q queue.Queue, hosts ...string) []bool {
	tb.Helper()
	got, err := q.Queued(context.Background(), Names(tb, hosts...))
	if err != nil {
		tb.Fatalf("Queued(%q) error: %v", hosts, err)
	}
	return got
}

func mustRequeue(tb testing.TB, q queue.Queue, sel queue.Selector) int {
	tb.Helper()
	n, err := q.Requeue(context.Background(), sel)
	if err != nil {
		tb.Fatalf("Requeue(%+v) error: %v", sel, err)
	}
	return n
}

// testQueuedFollowsProbes: a seeded host is queued until its probe is
// recorded; a host never seeded is not.
func testQueuedFollowsProbes(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com", "b.com")
	if got, want := mustQueued(t, q, "a.com", "b.com", "c.com"), []bool{true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("Queued(a, b, c) before probes = %v, want %v", got, want)
	}
	probeAll(t, q, time.Now(), map[string]string{"a.com": "ok", "b.com": "timeout"})
	if got, want := mustQueued(t, q, "a.com", "b.com", "c.com"), []bool{false, false, false}; !slices.Equal(got, want) {
		t.Fatalf("Queued(a, b, c) after probes = %v, want %v", got, want)
	}
	wantCounts(t, q, 0, 0, 0, 2)
}

// testRequeueByOutcome: only done hosts whose last outcome matches go back
// to pending, as fresh items, and count as queued again.
func testRequeueByOutcome(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com", "b.com", "c.com", "d.com")
	probeAll(t, q, time.Now(), map[string]string{
		"a.com": "timeout", "b.com": "ok", "c.com": "http_503", "d.com": "http_404"})
	if n := mustRequeue(t, q, queue.Selector{Outcomes: []string{"timeout", "http_5xx"}}); n != 2 {
		t.Fatalf("Requeue(timeout, http_5xx) = %d, want 2", n)
	}
	wantCounts(t, q, 2, 0, 0, 4)
	ls := mustLease(t, q, 10, long)
	got := hostsOf(ls)
	slices.Sort(got)
	if want := []string{"a.com", "c.com"}; !slices.Equal(got, want) {
		t.Fatalf("leased after Requeue = %v, want %v", got, want)
	}
	for _, l := range ls {
		if l.Item.Attempt != 0 {
			t.Errorf("requeued %s has attempt %d, want 0", l.Item.Host, l.Item.Attempt)
		}
	}
	if got, want := mustQueued(t, q, "a.com", "b.com", "c.com", "d.com"), []bool{true, false, true, false}; !slices.Equal(got, want) {
		t.Errorf("Queued(a, b, c, d) after Requeue = %v, want %v", got, want)
	}
	if n := mustRequeue(t, q, queue.Selector{Outcomes: []string{"timeout", "http_5xx"}}); n != 0 {
		t.Errorf("second Requeue = %d, want 0: a queued host has no probe to match", n)
	}
}

// testRequeueByAge: hosts probed before the cutoff go back, newer ones stay.
func testRequeueByAge(t *testing.T, q queue.Queue) {
	now := time.Now()
	mustSeed(t, q, "old.com")
	probeAll(t, q, now.Add(-10*24*time.Hour), map[string]string{"old.com": "ok"})
	mustSeed(t, q, "new.com")
	probeAll(t, q, now.Add(-time.Hour), map[string]string{"new.com": "ok"})
	if n := mustRequeue(t, q, queue.Selector{Before: now.Add(-7 * 24 * time.Hour)}); n != 1 {
		t.Fatalf("Requeue(older than 7d) = %d, want 1", n)
	}
	l := mustLeaseOne(t, q, long)
	if l.Item.Host != "old.com" {
		t.Errorf("leased %s after Requeue, want old.com", l.Item.Host)
	}
	if n := mustRequeue(t, q, queue.Selector{}); n != 1 {
		t.Errorf("Requeue(everything) = %d, want 1 (new.com; old.com is in flight)", n)
	}
}

// testRequeueConcurrentMovesOnce: callers requeueing at the same time move
// each host once between them.
func testRequeueConcurrentMovesOnce(t *testing.T, q queue.Queue) {
	hosts := make([]string, 300)
	outcomes := map[string]string{}
	for i := range hosts {
		hosts[i] = "h" + string(rune('a'+i%26)) + time.Duration(i).String() + ".com"
		outcomes[hosts[i]] = "timeout"
	}
	mustSeed(t, q, hosts...)
	for range 3 {
		probeAll(t, q, time.Now(), outcomes)
	}
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Go(func() { counts[i] = mustRequeue(t, q, queue.Selector{Outcomes: []string{"timeout"}}) })
	}
	wg.Wait()
	if sum := counts[0] + counts[1] + counts[2] + counts[3]; sum != len(hosts) {
		t.Errorf("concurrent Requeue moved %v = %d in all, want %d", counts, sum, len(hosts))
	}
	wantCounts(t, q, int64(len(hosts)), 0, 0, int64(len(hosts)))
}

// testAckAllRefusesBadOutcome: an outcome that is not one word is refused
// and nothing of the call is applied: no probe kept, no lease removed.
func testAckAllRefusesBadOutcome(t *testing.T, q queue.Queue) {
	mustSeed(t, q, "a.com", "b.com")
	ls := mustLease(t, q, 2, long)
	ps := []queue.Visit{{Host: "a.com", At: 1, Outcome: "ok"}, {Host: "b.com", At: 1, Outcome: "two words"}}
	if ok, err := q.AckAll(context.Background(), ls, ps); err == nil {
		t.Fatalf("AckAll with outcome \"two words\" = %v, nil error; want an error", ok)
	}
	if got, want := mustQueued(t, q, "a.com", "b.com"), []bool{true, true}; !slices.Equal(got, want) {
		t.Errorf("Queued(a, b) after a refused AckAll = %v, want %v", got, want)
	}
	wantCounts(t, q, 0, 2, 0, 2)
}

// testAckAllKeepsProbeOfLostLease: a probe is kept even when the lease
// acked with it turns out lost (the host is probed again and its record
// rewritten), and probes alone, with no lease, are kept too; a host
// never seeded is seen once probed.
func testAckAllKeepsProbeOfLostLease(t *testing.T, q queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "a.com")
	l := mustLeaseOne(t, q, long)
	mustAck(t, q, l)
	ok, err := q.AckAll(ctx, []queue.Lease{l}, []queue.Visit{{Host: "a.com", At: 1, Outcome: "timeout"}})
	if err != nil || !slices.Equal(ok, []bool{false}) {
		t.Fatalf("AckAll(acked lease) = %v, %v; want [false], nil", ok, err)
	}
	if ok, err := q.AckAll(ctx, nil, []queue.Visit{{Host: "new.com", At: 1, Outcome: "ok"}}); err != nil || len(ok) != 0 {
		t.Fatalf("AckAll(no leases, a probe) = %v, %v; want [], nil", ok, err)
	}
	wantCounts(t, q, 0, 0, 0, 2)
	if got, want := mustQueued(t, q, "a.com", "new.com"), []bool{false, false}; !slices.Equal(got, want) {
		t.Errorf("Queued(a, new) = %v, want %v", got, want)
	}
	if n := mustRequeue(t, q, queue.Selector{Outcomes: []string{"timeout"}}); n != 1 {
		t.Errorf("Requeue(timeout) = %d, want 1: a.com's probe kept with its lost lease", n)
	}
}

// testExportImportKeepsProbes: a done host's last probe travels through
// Export and Import, so the new queue knows which hosts are done and can
// requeue them by outcome.
func testExportImportKeepsProbes(t *testing.T, q, q2 queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "a.com", "b.com")
	probeAll(t, q, time.Unix(1705312200, 0), map[string]string{"a.com": "timeout", "b.com": "ok"})
	mustSeed(t, q, "c.com")
	var file bytes.Buffer
	if err := queue.Export(ctx, q, &file); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	if want := `{"kind":"seen","host":"a.com","at":1705312200,"outcome":"timeout"}`; !strings.Contains(file.String(), want) {
		t.Errorf("Export() =\n%s\nwant the line %s", file.String(), want)
	}
	if _, err := queue.Import(ctx, q2, bytes.NewReader(file.Bytes())); err != nil {
		t.Fatalf("Import() error: %v", err)
	}
	if got, want := mustQueued(t, q2, "a.com", "b.com", "c.com"), []bool{false, false, true}; !slices.Equal(got, want) {
		t.Errorf("Queued(a, b, c) after Import = %v, want %v", got, want)
	}
	if n := mustRequeue(t, q2, queue.Selector{Outcomes: []string{"timeout"}}); n != 1 {
		t.Errorf("Requeue(timeout) after Import = %d, want 1", n)
	}
}

// testAckAllManyProbes: an AckAll with more probes than one round trip or
// transaction of the backend takes keeps every probe and acks its lease.
func testAckAllManyProbes(t *testing.T, q queue.Queue) {
	hosts := make([]string, 2500)
	ps := make([]queue.Visit, len(hosts))
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d.example.com", i)
		ps[i] = queue.Visit{Host: host.Name(hosts[i]), At: 1, Outcome: "ok"}
	}
	mustSeed(t, q, "leased.com")
	l := mustLeaseOne(t, q, long)
	mustSeed(t, q, hosts...)
	ok, err := q.AckAll(context.Background(), []queue.Lease{l}, ps)
	if err != nil || !slices.Equal(ok, []bool{true}) {
		t.Fatalf("AckAll(leased.com, 2,500 probes) = %v, %v; want [true], nil", ok, err)
	}
	for i, queued := range mustQueued(t, q, hosts...) {
		if queued {
			t.Fatalf("Queued(%s) = true after AckAll kept its probe", hosts[i])
		}
	}
}

// testDeadHostIsNotQueued: a host whose attempts ran out is not queued (its
// node is written when another host meets it, as no probe of it will
// come); retried from dead, it is queued again, and an export and import
// keep both states.
func testDeadHostIsNotQueued(t *testing.T, q, q2 queue.Queue) {
	ctx := context.Background()
	mustSeed(t, q, "dead.com", "live.com")
	for _, l := range mustLease(t, q, 2, long) {
		if l.Item.Host == "dead.com" {
			mustFail(t, q, l, "boom", 1)
		} else {
			mustFail(t, q, l, "boom", 3) // back to pending
		}
	}
	if got, want := mustQueued(t, q, "dead.com", "live.com"), []bool{false, true}; !slices.Equal(got, want) {
		t.Fatalf("Queued(dead, live) = %v, want %v", got, want)
	}
	var file bytes.Buffer
	if err := queue.Export(ctx, q, &file); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	if _, err := queue.Import(ctx, q2, bytes.NewReader(file.Bytes())); err != nil {
		t.Fatalf("Import() error: %v", err)
	}
	if got, want := mustQueued(t, q2, "dead.com", "live.com"), []bool{false, true}; !slices.Equal(got, want) {
		t.Errorf("Queued(dead, live) after Import = %v, want %v", got, want)
	}
	var again bytes.Buffer
	if err := queue.Export(ctx, q2, &again); err != nil {
		t.Fatalf("Export() error: %v", err)
	}
	if !equalLines(file.String(), again.String()) {
		t.Errorf("export of the import differs:\n%s\nwant\n%s", again.String(), file.String())
	}
	if n, err := q.RetryDead(ctx, 0); err != nil || n != 1 {
		t.Fatalf("RetryDead() = %d, %v; want 1", n, err)
	}
	if got := mustQueued(t, q, "dead.com"); !got[0] {
		t.Errorf("Queued(dead) after RetryDead = false, want true")
	}
}

// testOlderExportBareSeenNotQueued: an export of an older spyder lists, as
// seen without a probe, hosts it probed before it kept probes: imported,
// they are not queued, while a bare seen host with a pending item is.
func testOlderExportBareSeenNotQueued(t *testing.T, q queue.Queue) {
	old := `{"kind":"pending","item":{"host":"todo.com","ts":1,"attempt":0}}
{"kind":"seen","host":"todo.com"}
{"kind":"seen","host":"done-long-ago.com"}
{"kind":"seen","host":"done.com","at":1705312200,"outcome":"ok"}
`
	if _, err := queue.Import(context.Background(), q, strings.NewReader(old)); err != nil {
		t.Fatalf("Import() error: %v", err)
	}
	if got, want := mustQueued(t, q, "todo.com", "done-long-ago.com", "done.com"), []bool{true, false, false}; !slices.Equal(got, want) {
		t.Errorf("Queued(todo, done-long-ago, done) = %v, want %v", got, want)
	}
	wantCounts(t, q, 1, 0, 0, 3)
}

// equalLines reports whether a and b hold the same lines in any order.
func equalLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}
