// Package storetest is the one conformance suite every [store.Backend]
// runs, so that the bbolt and the Redis backends behave identically: the
// queue, the output seen set and the spool. A backend's test calls [Run]
// with a [Harness] that opens fresh, empty, isolated backends; each subtest
// gets its own and most run in parallel.
//
// The suite uses real time (the contract has no clock), with short lease
// TTLs where expiry matters. Import it only from tests and benchmarks.
//
// Where the queue's contract leaves a detail open, the suite pins it down
// so that the backends agree:
//   - A seeded item is {"host":H,"ts":T,"attempt":0} exactly, T in Unix
//     seconds at the seed.
//   - An item that fails or expires for the last time is dead with
//     attempt = maxAttempts and the last reason as its error.
//   - Pending is FIFO among the hosts of one registrable domain (the
//     cases that check order use one site's hosts): a backend may keep
//     sites apart, as a sharded Redis queue does, and lease them in any
//     order.
//   - Where a retried, reclaimed or released item goes in pending (front
//     or back) is the backend's choice; pending and dead otherwise keep
//     their order through Dump and Load, processing and seen need not.
//   - Lease IDs travel with their records through Dump/Load and
//     Export/Import: the holder of a lease can ack it in the new queue.
//   - Load takes pending records that are only raw bytes; they go to dead
//     with the reason when leased.
//   - After Close every method returns ErrClosed at once.
package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Harness opens the backends the suite runs on.
type Harness struct {
	// New returns an empty backend no other subtest sees. It registers its
	// own cleanup with t.Cleanup, and that cleanup tolerates the backend
	// having been closed already (the suite closes some itself and ignores
	// the result of a second Close).
	New func(t *testing.T) store.Backend

	// Reopen returns a second handle on b's state, as the next process to
	// open the same file or Redis gets; it may close b first (a bbolt file
	// takes one process at a time), and b is not used after it.
	Reopen func(t *testing.T, b store.Backend) store.Backend
}

// Run runs every conformance case: the queue's, the seen set's, the
// spool's and the heartbeats'.
func Run(t *testing.T, h Harness) {
	t.Helper()
	t.Run("Queue", func(t *testing.T) {
		runQueue(t, func(t *testing.T) queue.Queue { return h.New(t) })
	})
	t.Run("Emitted", func(t *testing.T) {
		RunEmitted(t, func(t *testing.T) store.Emitted { return mustEmitted(t, h.New(t)) })
		t.Run("SurvivesReopen", func(t *testing.T) { testEmittedReopen(t, h) })
	})
	t.Run("Spool", func(t *testing.T) { runSpool(t, h) })
	t.Run("Probes", func(t *testing.T) { runProbes(t, h) })
}

// runQueue runs every queue case against queues made by newQueue.
func runQueue(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, q queue.Queue)
	}{
		// Seed
		{"SeedCountsAddedDuplicate", testSeedCounts},
		{"SeedDedupsWithinOneCall", testSeedDedupWithinCall},
		{"SeedDedupsAgainstSeenAfterAck", testSeedDedupAfterAck},
		{"SeedStoresOriginalItemJSON", testSeedItemJSON},
		{"SeedCancelledStoresNothing", testSeedCancelled},
		// Lease
		{"LeaseReturnsFIFOOrder", testLeaseFIFO},
		{"LeaseNeverHandsOutAnItemTwice", testLeaseExclusive},
		{"LeaseEmptyWaitsBoundedTime", testLeaseEmptyWaits},
		{"LeaseWakesWhenWorkArrives", testLeaseWakes},
		{"LeaseReturnsPromptlyOnCancel", testLeaseCancel},
		{"LeaseSendsUndecodableItemsToDead", testLeaseUndecodable},
		// Ack, Extend, lost leases
		{"AckRemovesItem", testAck},
		{"AckTwiceReportsLeaseLost", testAckTwice},
		{"AckAllAnswersEachLease", testAckAll},
		{"ExtendMovesDeadline", testExtend},
		{"StaleLeaseLeavesNewHolderAlone", testStaleLease},
		// Fail, Reclaim, Release
		{"FailRetriesThenDeadWithError", testFailRetriesThenDead},
		{"FailWithMaxAttemptsOneGoesDead", testFailMaxOne},
		{"ReclaimRequeuesExpiredWithAttemptPlusOne", testReclaim},
		{"ReclaimSendsExhaustedToDead", testReclaimDead},
		{"ReleaseReturnsLeasesUnchanged", testRelease},
		// Stats and dead
		{"StatsCountsEveryCollection", testStats},
		{"StatsReportsOldestLeaseAge", testStatsLeaseAge},
		{"DeadRetryDeadPurgeDead", testDeadRetryPurge},
		{"DeadItemsAreNeverTrimmed", testDeadNeverTrimmed},
		// Probe records, Queued, Requeue
		{"QueuedFollowsProbeRecords", testQueuedFollowsProbes},
		{"RequeueByOutcome", testRequeueByOutcome},
		{"RequeueByAge", testRequeueByAge},
		{"RequeueConcurrentMovesEachHostOnce", testRequeueConcurrentMovesOnce},
		{"AckAllRefusesBadOutcome", testAckAllRefusesBadOutcome},
		{"AckAllKeepsProbeOfLostLease", testAckAllKeepsProbeOfLostLease},
		{"AckAllManyProbes", testAckAllManyProbes},
		{"ExportImportKeepsLastProbes", twoQueues(newQueue, testExportImportKeepsProbes)},
		{"DeadHostIsNotQueued", twoQueues(newQueue, testDeadHostIsNotQueued)},
		{"OlderExportBareSeenNotQueued", testOlderExportBareSeenNotQueued},
		// Unknown fields
		{"UnknownFieldsSurviveEveryPath", testUnknownFields},
		// Dump, Load, Export, Import
		{"DumpLoadRoundTrip", twoQueues(newQueue, testDumpLoad)},
		{"LoadedLeaseCanBeAcked", twoQueues(newQueue, testLoadedLease)},
		{"ExportImportRoundTrip", twoQueues(newQueue, testExportImport)},
		{"LoadIntoNonEmptyReportsErrNotEmpty", testLoadNotEmpty},
		{"ImportBadLineAppliesNothing", testImportBadLine},
		// Lifecycle
		{"EveryMethodAfterCloseReportsErrClosed", testClosed},
		// Concurrency
		{"ConcurrentLeaseAckEachItemOnce", testConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newQueue(t))
		})
	}
}

// twoQueues adapts a case that moves state from one queue into a second.
func twoQueues(newQueue func(t *testing.T) queue.Queue, fn func(t *testing.T, q, q2 queue.Queue)) func(*testing.T, queue.Queue) {
	return func(t *testing.T, q queue.Queue) { fn(t, q, newQueue(t)) }
}

// Long is a lease TTL that never expires during a test.
const long = time.Hour

// mustSeed parses hosts, as every entry point does, seeds them, and fails
// the test on an error of either.
func mustSeed(tb testing.TB, q queue.Queue, hosts ...string) queue.SeedResult {
	tb.Helper()
	res, err := q.Seed(context.Background(), Names(tb, hosts...))
	if err != nil {
		tb.Fatalf("Seed(%q) error: %v", hosts, err)
	}
	return res
}

// Names parses each of in into a host name, failing the test on one that
// is not.
func Names(tb testing.TB, in ...string) []host.Name {
	tb.Helper()
	out := make([]host.Name, len(in))
	for i, s := range in {
		h, err := host.Parse(s)
		if err != nil {
			tb.Fatalf("host.Parse(%q): %v", s, err)
		}
		out[i] = h
	}
	return out
}

// Ack acks one lease with AckAll, reporting a lost lease as
// queue.ErrLeaseLost: the one-lease ack tests want, which the queue's
// contract does not carry.
func Ack(ctx context.Context, q queue.Work, l queue.Lease) error {
	ok, err := q.AckAll(ctx, []queue.Lease{l}, nil)
	if err != nil {
		return err
	}
	if !ok[0] {
		return queue.ErrLeaseLost
	}
	return nil
}

// mustLease leases up to n items without waiting.
func mustLease(tb testing.TB, q queue.Queue, n int, ttl time.Duration) []queue.Lease {
	tb.Helper()
	ls, err := q.Lease(context.Background(), n, ttl, 0)
	if err != nil {
		tb.Fatalf("Lease(%d) error: %v", n, err)
	}
	return ls
}

func mustLeaseOne(tb testing.TB, q queue.Queue, ttl time.Duration) queue.Lease {
	tb.Helper()
	ls := mustLease(tb, q, 1, ttl)
	if len(ls) != 1 {
		tb.Fatalf("Lease(1) returned %d leases, want 1", len(ls))
	}
	return ls[0]
}

func mustStats(tb testing.TB, q queue.Queue) queue.Stats {
	tb.Helper()
	s, err := q.Stats(context.Background())
	if err != nil {
		tb.Fatalf("Stats() error: %v", err)
	}
	return s
}

// wantCounts compares the four collection sizes, ignoring lease age.
func wantCounts(tb testing.TB, q queue.Queue, pending, processing, dead, seen int64) {
	tb.Helper()
	s := mustStats(tb, q)
	got := [4]int64{s.Pending, s.Processing, s.Dead, s.Seen}
	want := [4]int64{pending, processing, dead, seen}
	if got != want {
		tb.Errorf("Stats() pending/processing/dead/seen = %v, want %v", got, want)
	}
}

func hostsOf(ls []queue.Lease) []string {
	hs := make([]string, len(ls))
	for i, l := range ls {
		hs[i] = string(l.Item.Host)
	}
	return hs
}

func mustAck(tb testing.TB, q queue.Queue, l queue.Lease) {
	tb.Helper()
	if err := Ack(context.Background(), q, l); err != nil {
		tb.Fatalf("Ack(%s) error: %v", l.Item.Host, err)
	}
}

func mustFail(tb testing.TB, q queue.Queue, l queue.Lease, reason string, max int) {
	tb.Helper()
	if err := q.Fail(context.Background(), l, reason, max); err != nil {
		tb.Fatalf("Fail(%s) error: %v", l.Item.Host, err)
	}
}

// reclaimUntil runs Reclaim until the hosts in want (sorted) have been
// requeued or sent dead, or two seconds pass: backends may keep deadlines at
// millisecond or coarser precision, so a lease of 10ms is expired "soon".
func reclaimUntil(tb testing.TB, q queue.Queue, max int, want int) queue.ReclaimResult {
	tb.Helper()
	var all queue.ReclaimResult
	stop := time.Now().Add(2 * time.Second)
	for {
		r, err := q.Reclaim(context.Background(), queue.DefaultLeaseTTL, max)
		if err != nil {
			tb.Fatalf("Reclaim() error: %v", err)
		}
		all.Requeued = append(all.Requeued, r.Requeued...)
		all.Dead = append(all.Dead, r.Dead...)
		if len(all.Requeued)+len(all.Dead) >= want || time.Now().After(stop) {
			slices.Sort(all.Requeued)
			slices.Sort(all.Dead)
			return all
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isLeaseLost(err error) bool { return errors.Is(err, queue.ErrLeaseLost) }
