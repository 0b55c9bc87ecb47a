package limiter

import (
	"context"
	"errors"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limiter spaces out requests per key. The crawl calls Wait (or Allow)
// before every request to a host; the CLI sets the rate and reads Stats.
// Implementations are safe for concurrent use by any number of workers.
type Limiter interface {
	// Wait blocks until a request for key may go out. It returns ctx.Err()
	// promptly when ctx is done first, and ErrClosed once the limiter is
	// closed.
	Wait(ctx context.Context, key string) error
	// Allow reports whether a request for key may go out now, and counts it
	// if so. It never blocks on the rate.
	Allow(key string) bool
	// SetRate changes the rate (requests per second) and the burst at run
	// time, for keys already tracked as well as new ones.
	SetRate(perSecond float64, burst int)
	// Stats returns counters and the state of the keys tracked.
	Stats() Stats
	// Close stops the limiter: waits in progress and later return ErrClosed.
	Close() error
}

// ErrClosed is returned by Wait once the limiter has been closed, including
// to waits already in progress.
var ErrClosed = errors.New("limiter: closed")

// The defaults spyder runs with: one request a second per key, with bursts
// of three so robots.txt, the page and one redirect go out without waiting.
const (
	DefaultPerSecond = 1.0
	DefaultBurst     = 3
)

// DefaultMaxEntries is how many keys a [Local] tracks at most unless
// [MaxEntries] says otherwise.
const DefaultMaxEntries = 10_000

// Stats is a snapshot of a limiter's state.
type Stats struct {
	// Keys is the number of keys tracked now.
	Keys int
	// Tokens is the number of tokens each tracked key has now; it is
	// negative while waiters hold reservations on the key.
	Tokens map[string]float64
	// Waits counts Wait calls that had to sleep.
	Waits uint64
	// Denials counts Allow calls that reported false.
	Denials uint64
	// Evictions counts idle keys forgotten to make room for new ones.
	Evictions uint64
}

// Local is a [Limiter] for one process: a token bucket per key, built on
// golang.org/x/time/rate. Its zero value is not usable; call [New].
//
// A Local is safe for concurrent use; the whole process should share one, so
// that all workers together hold each key's rate. It tracks at most
// MaxEntries keys (see the package doc for how they are evicted) and starts
// no goroutine.
type Local struct {
	seed   maphash.Seed
	shards []shard
	done   chan struct{}
	once   sync.Once

	waits     atomic.Uint64
	denials   atomic.Uint64
	evictions atomic.Uint64
}

var _ Limiter = (*Local)(nil)

// Option configures a [Local] made by [New].
type Option func(*config)

type config struct{ maxEntries int }

// MaxEntries bounds the number of keys a [Local] tracks (default
// [DefaultMaxEntries]). Values below 1 mean the default.
func MaxEntries(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxEntries = n
		}
	}
}

// The key table is split into up to maxShards independently locked parts,
// so that workers hitting different keys rarely wait for each other. Each
// part holds an equal share of the bound, at least minShardEntries keys, so
// that an uneven spread of keys wastes little of it.
const (
	maxShards       = 32
	minShardEntries = 256
)

// New returns a Local that lets perSecond requests per second through for
// each key, with bursts of up to burst requests. A perSecond of +Inf, zero,
// a negative value or NaN means no limit; a burst below 1 means 1.
func New(perSecond float64, burst int, opts ...Option) *Local {
	c := config{maxEntries: DefaultMaxEntries}
	for _, o := range opts {
		o(&c)
	}
	n := min(maxShards, max(1, c.maxEntries/minShardEntries))
	l := &Local{
		seed:   maphash.MakeSeed(),
		shards: make([]shard, n),
		done:   make(chan struct{}),
	}
	r, b := limits(perSecond, burst)
	for i := range l.shards {
		// Split the bound exactly, so the shards together never exceed it.
		size := c.maxEntries / n
		if i < c.maxEntries%n {
			size++
		}
		l.shards[i] = shard{limit: r, burst: b, max: size, m: make(map[string]*entry), evictions: &l.evictions}
	}
	return l
}

// limits turns New's and SetRate's arguments into a rate and burst;
// rate.Inf stands for no limit.
func limits(perSecond float64, burst int) (rate.Limit, int) {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return rate.Inf, max(burst, 1)
	}
	return rate.Limit(perSecond), max(burst, 1)
}

func (l *Local) shardFor(key string) *shard {
	if len(l.shards) == 1 {
		return &l.shards[0]
	}
	return &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
}

func (l *Local) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Allow reports whether a request for key may go out now, and takes a token
// from key's bucket if so. It reports false when the bucket is empty or when
// key is new and finds the table full of busy keys (both counted in
// [Stats].Denials), and after Close.
func (l *Local) Allow(key string) bool { return l.allowAt(key, time.Now()) }

func (l *Local) allowAt(key string, now time.Time) bool {
	if l.closed() {
		return false
	}
	if l.shardFor(key).allow(key, now) {
		return true
	}
	l.denials.Add(1)
	return false
}

// Wait blocks until a request for key may go out, taking a token from key's
// bucket. It reserves the token before sleeping, so waiters are served in
// the order they arrived, and holds no lock while it sleeps. If ctx is done
// first, Wait gives the reservation back and returns ctx.Err() at once; if
// ctx's deadline comes before the token would, it returns at once with an
// error wrapping context.DeadlineExceeded. After Close it returns ErrClosed.
//
// A new key that finds the table full of busy keys waits until the first of
// them is idle and takes its place.
func (l *Local) Wait(ctx context.Context, key string) error {
	counted := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.closed() {
			return ErrClosed
		}
		now := time.Now()
		s := l.shardFor(key)
		r, retryAt := s.reserve(key, now)
		var d time.Duration
		if r == nil && retryAt.IsZero() {
			return nil // no limit
		}
		if r != nil {
			d = r.DelayFrom(now)
			if d <= 0 {
				return nil
			}
		} else if d = retryAt.Sub(now); d <= 0 {
			continue
		}
		if !counted {
			l.waits.Add(1)
			counted = true
		}
		if err := Sleep(ctx, l.done, key, d); err != nil {
			s.cancel(key, r, time.Now())
			return err
		}
		if r != nil {
			return nil
		}
		// A slot in the table should be free now: try again.
	}
}

// SetRate changes the rate and burst, with the meaning New gives them. Keys
// already tracked follow at once, keeping the tokens they have (capped at
// the new burst), so an operator's change takes effect immediately; waits
// already sleeping keep the time they were given.
func (l *Local) SetRate(perSecond float64, burst int) { l.setRateAt(perSecond, burst, time.Now()) }

func (l *Local) setRateAt(perSecond float64, burst int, now time.Time) {
	r, b := limits(perSecond, burst)
	for i := range l.shards {
		l.shards[i].setRate(r, b, now)
	}
}

// Stats returns counters and the tokens of every tracked key. It visits
// every key, so it suits a metrics scrape, not a hot path.
func (l *Local) Stats() Stats { return l.statsAt(time.Now()) }

func (l *Local) statsAt(now time.Time) Stats {
	st := Stats{
		Tokens:    make(map[string]float64),
		Waits:     l.waits.Load(),
		Denials:   l.denials.Load(),
		Evictions: l.evictions.Load(),
	}
	for i := range l.shards {
		l.shards[i].tokens(st.Tokens, now)
	}
	st.Keys = len(st.Tokens)
	return st
}

// Close makes every Wait in progress, and any later one, return ErrClosed,
// and later Allow calls report false. A Local starts no goroutine, so
// nothing else needs stopping. Close always returns nil.
func (l *Local) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Len returns the number of keys tracked, without Stats' per-key copy.
func (l *Local) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
