package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// Options configures [Open].
type Options struct {
	// Key is the base key every queue key is built from (see the package
	// doc); "" means [queue.DefaultKey]. With Redis Cluster it must contain a
	// hash tag, e.g. "{spyder}:queue".
	Key string

	// Shards is how many shards [Dial] splits the queue into: 0 means the
	// count stored with the queue, else the default (see [Sharded]). Open
	// ignores it.
	Shards int

	// Now, when set, is the clock lease deadlines are computed from. When nil
	// (the default, and what a fleet wants) the scripts read the Redis
	// server's clock, so the clocks of the probes do not matter. Tests set it
	// to move time by hand.
	Now func() time.Time

	// SeedWait, when positive, makes every seed write wait up to this
	// long for a replica to confirm it (Redis WAIT 1), so that a failover
	// right after cannot lose the hosts it added. 0: no wait.
	SeedWait time.Duration
}

// Store is the Redis [store.Backend]: its queue, and the seen set, spool
// and fleet limiter beside it under the same base key. It is safe for concurrent use, and any
// number of processes may share one queue. Concurrent Lease and AckAll
// calls are coalesced into batches of one script call each, so many
// goroutines each leasing one item cost few round trips. AckAll,
// Extend, Fail and Release find a lease by its ID and Raw, so pass the
// [queue.Lease] as Lease (or Extend) returned it.
type Store struct {
	fleet
	k   keys
	now func() time.Time // nil: server time

	seedWait time.Duration // Options.SeedWait

	// geo is the host table's geometry as the last seed call left it (nil:
	// not known), from which Seed computes the keys of the hosts' buckets.
	geo atomic.Pointer[tableGeo]

	// replies is this store's hash of recent script outcomes, so that a
	// call the client retries after losing its reply is answered again
	// instead of run twice (leaseack.lua, finish.lua). Tokens number the
	// calls.
	replies           string
	hotSeq, finishSeq atomic.Int64

	closed atomic.Bool
	mu     sync.Mutex          // guards closing
	hot    *batcher[op, opRes] // Lease and AckAll
}

var _ queue.Queue = (*Store)(nil)

// errStopped is what a batched call returns when the store closed before it
// ran; [interpret] turns it into queue.ErrClosed.
var errStopped = errors.New("store closed")

// batchLoops is how many batches may be in flight at once: while one runs,
// callers queue up and the next takes them all. Two measured a little
// better than one on a quiet machine (the next batch is built while one is
// in Redis), and no worse on a busy one; more only made batches smaller.
const batchLoops = 2

// Open returns the queue under o.Key in the Redis client c. It checks the
// server (Redis 6.2 or newer) and loads the scripts. The caller owns c and
// closes it after [Store.Close]; other parts of a probe (the fleet limiter)
// may share it.
func Open(ctx context.Context, c redis.UniversalClient, o Options) (*Store, error) {
	base := o.Key
	if base == "" {
		base = queue.DefaultKey
	}
	if _, ok := c.(*redis.ClusterClient); ok && hashTag(base) == "" {
		return nil, fmt.Errorf("key %q has no hash tag; Redis Cluster needs one so all queue keys share a slot, e.g. %q", base, "{"+base+"}")
	}
	if err := checkVersion(ctx, c); err != nil {
		return nil, err
	}
	if err := checkLayout(ctx, c, newKeys(base)); err != nil {
		return nil, err
	}
	for _, sc := range allScripts {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return nil, interpret("load scripts", err)
		}
	}
	return newStore(c, base, o)
}

// newStore returns the queue under base in c without checking the server
// or loading the scripts: [Open] has, or a [Sharded] did for its first shard.
func newStore(c redis.UniversalClient, base string, o Options) (*Store, error) {
	var inst [8]byte
	if _, err := rand.Read(inst[:]); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	s := &Store{fleet: fleet{c: c, base: base}, k: newKeys(base), now: o.Now, seedWait: o.SeedWait,
		replies: base + ":replies:" + hex.EncodeToString(inst[:])}
	s.hot = newBatcher(batchLoops, maxBatch, func(o op) int { return max(o.n, len(o.acks), len(o.probes)/2, 1) }, s.hotBatch)
	return s, nil
}

// checkVersion refuses servers older than 6.2, which lack RPOP with a count.
func checkVersion(ctx context.Context, c redis.UniversalClient) error {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOPERM") {
			return nil // an ACL user without INFO: let the scripts tell
		}
		return interpret("info", err)
	}
	for _, line := range strings.Split(info, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		major, _ := strconv.Atoi(parts[0])
		minor := 0
		if len(parts) > 1 {
			minor, _ = strconv.Atoi(parts[1])
		}
		if major < 6 || major == 6 && minor < 2 {
			return fmt.Errorf("Redis %s is too old; 6.2 or newer is required", v)
		}
		return nil
	}
	return nil // not Redis proper (a compatible server): let the scripts tell
}

// Client returns the Redis client the store uses, for other parts of a
// probe that keep state in the same server (the fleet limiter).
func (s *Store) Client() redis.UniversalClient { return s.c }

// Key returns the base key, e.g. "spyder:queue".
func (s *Store) Key() string { return s.base }

// Close stops the store: calls waiting in a batch and every later call
// return queue.ErrClosed. It closes the client only if [Connect] made it
// (else the caller owns it), and does not return held leases: they expire.
// Closing twice is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.hot.close()
	if s.ownsClient {
		return s.c.Close()
	}
	return nil
}

// check returns the error a call must return before doing anything.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return queue.ErrClosed
	}
	return ctx.Err()
}

// run runs a script, translating its errors for op.
func (s *Store) run(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) (any, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	v, err := sc.Run(ctx, s.c, keys, args...).Result()
	if err != nil {
		return nil, s.interpret(ctx, op, err)
	}
	return v, nil
}

// interpret is the one place Redis errors become queue errors: a closed
// client or store becomes queue.ErrClosed; context errors stay themselves;
// a refused write matches store.ErrWritesRefused; anything else is wrapped
// with the operation's name.
func interpret(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.ErrClosed), errors.Is(err, errStopped):
		return fmt.Errorf("%s: %w", op, queue.ErrClosed)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return fmt.Errorf("%s: %w", op, refusal(err))
	}
}

// nowArg is the "now" argument of the scripts: Unix ms from o.Now, or ""
// for the server's clock.
func (s *Store) nowArg() string {
	if s.now == nil {
		return ""
	}
	return strconv.FormatInt(s.now().UnixMilli(), 10)
}

// wallNow is the time written into dead entries ("at"), which is for people
// reading them, not for any deadline.
func (s *Store) wallNow() time.Time {
	if s.now == nil {
		return time.Now()
	}
	return s.now()
}

// ttlMillis turns a TTL into whole milliseconds, at least 1.
func ttlMillis(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// toInt64 reads an integer reply of a script.
func toInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

// toString reads a bulk string reply of a script.
func toString(v any) string {
	s, _ := v.(string)
	return s
}
