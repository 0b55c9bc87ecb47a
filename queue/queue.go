// Package queue holds the contract every spyder work queue keeps: the [Item]
// that travels through it, the [Work] half that a crawl's hot path uses and
// the [Admin] half that the `spyder queue` verbs use (together a [Queue]),
// the sentinel errors backends return, the export/import format, and
// seeding a queue from a domains file ([SeedFile]), where a host from a
// file enters spyder. Hosts travel parsed ([host.Name]); backends live in
// store/.
package queue

import (
	"context"
	"errors"
	"time"

	"github.com/spyder-crawler/spyder/host"
)

// Defaults shared by every backend and the command line.
const (
	DefaultKey         = "spyder:queue" // Redis base key
	DefaultLeaseTTL    = 2 * time.Minute
	DefaultMaxAttempts = 3
)

// Sentinel errors. Backends translate their own errors into these at a single
// edge; callers compare with [errors.Is].
var (
	// ErrLeaseLost is returned by Extend and Fail (and reported by AckAll and
	// Release per lease) when the lease is no longer held by the caller: it expired and was reclaimed (and may now
	// be held by another worker, whose lease is left untouched), or it was
	// already acked.
	ErrLeaseLost = errors.New("queue: lease lost")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("queue: closed")

	// ErrNotEmpty is returned by Import when the target queue already holds
	// state (pending, processing, dead or seen records); importing into a
	// used queue would silently merge two crawls.
	ErrNotEmpty = errors.New("queue: not empty")
)

// Queue is a durable work queue of hosts with leases: both halves of the
// contract and Close. Implementations are safe for concurrent use by many
// goroutines (and, for shared backends, by many processes). Every method
// honours ctx: a cancelled ctx makes it return promptly with ctx's error and
// no partial state change.
type Queue interface {
	Work
	Admin

	// Close releases the backend's resources. Leases held are not returned:
	// they expire.
	Close() error
}

// Work is what a crawl's loop uses: it leases hosts, keeps their leases
// alive, acknowledges or fails them, queues what it discovers, hands back
// what it did not finish, and reclaims the leases of workers that died.
type Work interface {
	// Seed skips hosts already in the seen set (ever seeded into this queue,
	// including duplicates within hosts) and appends the rest to pending in
	// order, in chunks of one round trip or transaction each.
	Seed(ctx context.Context, hosts []host.Name) (SeedResult, error)

	// Lease atomically moves up to n of the oldest pending items to
	// processing, each with a deadline ttl from now, and returns them. When
	// nothing is pending it waits up to wait for work, then returns an empty
	// slice and a nil error. Two leases never hold the same item at once.
	// Undecodable items met on the way go to dead with the reason; they are
	// never returned and never block the queue.
	Lease(ctx context.Context, n int, ttl, wait time.Duration) ([]Lease, error)

	// AckAll keeps each of ps as its host's last visit, replacing the one
	// before, and removes every lease in ls for good, all in one round trip
	// or transaction: ok[i] reports whether ls[i] was held and is now
	// removed (false: the lease was lost, see [ErrLeaseLost]). Callers that
	// finish many items at once pay one wait instead of one each, and pass
	// the visits of the hosts they ack, so that every host acked has its
	// record. Every visit is kept, even one whose lease turns out lost: its
	// host is visited again and its record rewritten. An outcome
	// [CheckOutcome] refuses is an error and nothing is applied. On any
	// other error nothing is reported; the call may or may not have been
	// applied, and acking again reports the leases removed as lost.
	AckAll(ctx context.Context, ls []Lease, ps []Visit) (ok []bool, err error)

	// Extend moves a held lease's deadline to ttl from now and returns the
	// updated lease. It returns ErrLeaseLost when the lease is no longer held.
	Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)

	// Fail records reason and returns the item to pending with attempt+1, or
	// moves it to dead when attempt+1 reaches maxAttempts. It returns
	// ErrLeaseLost when the lease is no longer held.
	Fail(ctx context.Context, l Lease, reason string, maxAttempts int) error

	// Release returns held leases to pending unchanged (attempt not counted)
	// in one atomic step; it is the shutdown path. Leases no longer held are
	// skipped and reported in the count's complement.
	Release(ctx context.Context, ls []Lease) (int, error)

	// Reclaim moves every processing item whose deadline has passed (and
	// every item an older worker left in processing without a lease record,
	// once a ttl has passed since it was first noticed) back to pending with
	// attempt+1, or to dead when that reaches maxAttempts, atomically.
	Reclaim(ctx context.Context, ttl time.Duration, maxAttempts int) (ReclaimResult, error)

	// Stats reports the sizes of the collections and the age of the oldest
	// lease.
	Stats(ctx context.Context) (Stats, error)

	// Queued reports, for each of hosts, whether the queue holds it to be
	// visited: it was seeded (or requeued) and has no visit record since.
	// A host never seeded, or done, is not queued.
	Queued(ctx context.Context, hosts []host.Name) ([]bool, error)
}

// Admin is what an operator's verbs use besides Seed, Stats and Reclaim:
// the dead items, and the whole state for export and import.
type Admin interface {
	// Dead lists up to limit dead items, oldest first (limit <= 0: all).
	Dead(ctx context.Context, limit int) ([]DeadItem, error)

	// RetryDead moves up to limit dead items (limit <= 0: all) back to pending
	// with attempt reset to 0, and returns how many moved.
	RetryDead(ctx context.Context, limit int) (int, error)

	// PurgeDead deletes every dead item and returns how many there were.
	PurgeDead(ctx context.Context) (int, error)

	// Requeue moves every done host whose last visit sel picks back to
	// pending, as a new item with attempt 0, and forgets that visit, so the
	// host counts as queued again; it returns how many moved. Each host
	// moves once even when several callers requeue at the same time.
	Requeue(ctx context.Context, sel Selector) (int, error)

	// Dump calls fn with every record the queue holds: pending oldest first,
	// then processing, dead and seen. It stops at fn's first error and
	// returns it. It is the backend half of [Export].
	Dump(ctx context.Context, fn func(Record) error) error

	// Load stores records (already validated) into an empty queue, pending in
	// the given order. It returns ErrNotEmpty when the queue holds state. It
	// is the backend half of [Import].
	Load(ctx context.Context, recs []Record) error
}

// Lease is one leased item. ID identifies this lease, not the host: after a
// lease is reclaimed and the host leased again, the old Lease's AckAll,
// Extend and Fail report it lost and leave the new holder's lease alone.
type Lease struct {
	Item     Item
	Raw      []byte    // the item's bytes exactly as stored
	ID       string    // opaque, backend-defined lease identity
	Deadline time.Time // when the lease expires unless extended
}

// SeedResult counts what Seed did with its input.
type SeedResult struct {
	Added     int
	Duplicate int
}

// ReclaimResult reports the hosts Reclaim moved, as text for reports: an
// item that no longer decoded is named by the start of its bytes.
type ReclaimResult struct {
	Requeued []string // back to pending with attempt+1
	Dead     []string // attempts exhausted
}

// Stats is a snapshot of a queue's collections.
type Stats struct {
	Pending        int64
	Processing     int64
	Dead           int64
	Seen           int64
	OldestLeaseAge time.Duration // 0 when nothing is processing
}

// DeadItem is an item that will not be retried on its own, with why.
// Raw holds the stored bytes (which may not even be JSON); Item is set when
// they decoded.
type DeadItem struct {
	Raw   []byte
	Item  *Item
	Error string
	At    int64 // Unix seconds when it died
}

// Record kinds, as they appear in export files.
const (
	KindPending    = "pending"
	KindProcessing = "processing"
	KindDead       = "dead"
	KindSeen       = "seen"
)

// Record is one piece of queue state, the unit of [Export] and [Import]:
// a pending item; a processing item with its lease ID and deadline; a dead
// item with its error; or a host of the seen set.
type Record struct {
	Kind     string
	Item     *Item     // pending, processing, and dead when it decoded
	Raw      []byte    // pending or dead: the stored bytes when they did not decode
	LeaseID  string    // processing
	Deadline time.Time // processing
	Error    string    // dead
	At       int64     // dead, or seen with an Outcome: Unix seconds
	Host     host.Name // seen
	Outcome  string    // seen: the host's last visit's outcome ("": not visited since queued)
}
