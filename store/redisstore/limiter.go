package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/limiter"
)

const (
	// limiterProbeEvery is how often a Limiter whose Redis is unreachable
	// tries it again.
	limiterProbeEvery = time.Second
	// limiterTimeout bounds one pipeline of decisions, retries included, so
	// that a Redis going away sends callers to the fallback soon.
	limiterTimeout = time.Second
)

// Limiter is the fleet-wide [limiter.Limiter]: every probe that builds one on
// the same Redis and base key holds each key's rate together, whatever the
// number of probes. Each decision is one run of a script (GCRA, on the Redis
// server's clock) on a key kept under "{base}:rl:{key}" until it is idle
// again; decisions asked for at the same time share one pipeline.
//
// When Redis cannot be reached, the Limiter decides with its local fallback
// instead and logs that once; it tries Redis again at most once a second and
// logs once more when it is back. While it falls back, each probe holds the
// rate on its own, so a fleet of N probes may send up to N times the rate.
//
// A Limiter is safe for concurrent use and starts no goroutine.
type Limiter struct {
	c        redis.UniversalClient
	prefix   string
	fallback *limiter.Local
	log      *slog.Logger
	params   atomic.Pointer[gcraParams]

	// epoch counts changes between Redis and the fallback: even while Redis
	// decides, odd while the fallback does. A batch records the epoch it
	// started in, so a late answer from a past epoch changes nothing.
	epoch     atomic.Uint64
	nextProbe atomic.Int64 // Unix ns: when the next call may try Redis again

	bmu     sync.Mutex
	pending *gcraBatch // the batch callers join, waiting for its turn
	running int        // batches in flight

	waits   atomic.Uint64
	denials atomic.Uint64
	done    chan struct{}
	once    sync.Once
}

var _ limiter.Limiter = (*Limiter)(nil)

type gcraParams struct {
	unlimited bool
	interval  float64 // µs between requests
	burst     int
}

func newGCRAParams(perSecond float64, burst int) *gcraParams {
	p := &gcraParams{burst: max(burst, 1)}
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		p.unlimited = true
	} else {
		p.interval = 1e6 / perSecond
	}
	return p
}

// NewLimiter returns a fleet-wide limiter on c for perSecond requests per
// second per key with bursts of burst, with the meaning [limiter.New] gives
// them, keeping its keys under base+":rl:". It takes over fallback (nil
// means a new [limiter.Local] with the same rate): SetRate and Close apply to
// it too. A nil logger means [slog.Default]. The caller owns c and closes it
// after Close.
func NewLimiter(c redis.UniversalClient, base string, perSecond float64, burst int, fallback *limiter.Local, logger *slog.Logger) *Limiter {
	if fallback == nil {
		fallback = limiter.New(perSecond, burst)
	}
	if logger == nil {
		logger = slog.Default()
	}
	l := &Limiter{c: c, prefix: base + ":rl:", fallback: fallback, log: logger, done: make(chan struct{})}
	l.params.Store(newGCRAParams(perSecond, burst))
	return l
}

// errUseFallback tells a caller of decide to ask the fallback instead.
var errUseFallback = errors.New("redis limiter unavailable")

//go:embed gcra.lua
var gcraLua string

var gcraScript = redis.NewScript(gcraLua)

// limiterPipelines is how many pipelines of decisions may be in flight at
// once. Callers that come while they all are join the next batch, so under
// load one round trip carries many decisions.
const limiterPipelines = 4

// gcraBatch is the decisions of concurrent callers, sent in one pipeline by
// the caller that created the batch, once it has its turn.
type gcraBatch struct {
	keys   []string
	params []*gcraParams
	res    [][]int64
	err    error
	turn   chan struct{} // closed when the batch may run
	done   chan struct{} // closed when res and err are set
}

// decide asks Redis whether a request for key may go now and, if not, how
// long to wait. It returns errUseFallback when Redis is down (or has just
// failed), and ctx's error when ctx ends first (the decision may still be
// made in Redis, counting a request that will not happen).
func (l *Limiter) decide(ctx context.Context, key string, p *gcraParams) (bool, time.Duration, error) {
	if l.epoch.Load()%2 == 1 && !l.claimProbe(time.Now()) {
		return false, 0, errUseFallback
	}
	l.bmu.Lock()
	b, creator := l.pending, false
	if b == nil {
		b = &gcraBatch{turn: make(chan struct{}), done: make(chan struct{})}
		l.pending, creator = b, true
		if l.running < limiterPipelines {
			l.running++
			l.pending = nil
			close(b.turn)
		}
	}
	i := len(b.keys)
	b.keys = append(b.keys, l.prefix+key)
	b.params = append(b.params, p)
	l.bmu.Unlock()
	if creator {
		// Not cancellable: the batch's other callers depend on it, and
		// the wait is at most one pipeline's round trip.
		<-b.turn
		l.run(b)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return false, 0, ctx.Err()
	}
	if b.err != nil {
		return false, 0, errUseFallback
	}
	return b.res[i][0] == 1, time.Duration(b.res[i][1]) * time.Microsecond, nil
}

// run sends b's decisions to Redis, publishes the answers, notes whether
// Redis is up or down, and hands the turn to the next batch.
func (l *Limiter) run(b *gcraBatch) {
	epoch := l.epoch.Load()
	ctx, cancel := context.WithTimeout(context.Background(), limiterTimeout)
	b.res, b.err = l.exec(ctx, b)
	if redis.HasErrorPrefix(b.err, "NOSCRIPT") { // Redis restarted or was flushed
		if b.err = gcraScript.Load(ctx, l.c).Err(); b.err == nil {
			b.res, b.err = l.exec(ctx, b)
		}
	}
	cancel()
	if b.err != nil {
		l.nextProbe.Store(time.Now().Add(limiterProbeEvery).UnixNano())
		if epoch%2 == 0 && l.epoch.CompareAndSwap(epoch, epoch+1) {
			l.log.Warn("redisstore: limiter falling back to the local limiter: redis unreachable", "err", b.err)
		}
	} else if epoch%2 == 1 && l.epoch.CompareAndSwap(epoch, epoch+1) {
		l.log.Info("redisstore: limiter back on redis")
	}
	close(b.done)

	l.bmu.Lock()
	l.running--
	if next := l.pending; next != nil {
		l.running++
		l.pending = nil
		close(next.turn)
	}
	l.bmu.Unlock()
}

// exec runs the gcra script once per key of b in one pipeline.
func (l *Limiter) exec(ctx context.Context, b *gcraBatch) ([][]int64, error) {
	pipe := l.c.Pipeline()
	cmds := make([]*redis.Cmd, len(b.keys))
	for i, key := range b.keys {
		cmds[i] = gcraScript.EvalSha(ctx, pipe, []string{key}, b.params[i].interval, b.params[i].burst)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	res := make([][]int64, len(cmds))
	for i, cmd := range cmds {
		v, err := cmd.Int64Slice()
		if err == nil && len(v) != 2 {
			err = fmt.Errorf("%d values in reply, want 2", len(v))
		}
		if err != nil {
			return nil, fmt.Errorf("gcra: %w", err)
		}
		res[i] = v
	}
	return res, nil
}

// claimProbe reports whether this caller, while Redis is down, is the one to
// try it again now.
func (l *Limiter) claimProbe(now time.Time) bool {
	next := l.nextProbe.Load()
	return now.UnixNano() >= next && l.nextProbe.CompareAndSwap(next, now.Add(limiterProbeEvery).UnixNano())
}

func (l *Limiter) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Allow reports whether a request for key may go out now, counting it
// fleet-wide if so. It reports false after Close.
func (l *Limiter) Allow(key string) bool {
	if l.closed() {
		return false
	}
	p := l.params.Load()
	if p.unlimited {
		return true
	}
	ok, _, err := l.decide(context.Background(), key, p)
	if err != nil {
		return l.fallback.Allow(key)
	}
	if !ok {
		l.denials.Add(1)
	}
	return ok
}

// Wait blocks until a request for key may go out, counting it fleet-wide. It
// asks Redis, sleeps as long as Redis says, and asks again, so waiters across
// the fleet are not served in any particular order. It returns ctx.Err()
// promptly when ctx is done first, an error wrapping
// context.DeadlineExceeded at once when Redis asks for a wait beyond ctx's
// deadline, and [limiter.ErrClosed] after Close.
func (l *Limiter) Wait(ctx context.Context, key string) error {
	counted := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.closed() {
			return limiter.ErrClosed
		}
		p := l.params.Load()
		if p.unlimited {
			return nil
		}
		ok, d, err := l.decide(ctx, key, p)
		if errors.Is(err, errUseFallback) {
			return l.fallback.Wait(ctx, key)
		}
		if err != nil || ok {
			return err
		}
		if !counted {
			l.waits.Add(1)
			counted = true
		}
		if err := limiter.Sleep(ctx, l.done, key, d); err != nil {
			return err
		}
	}
}

// SetRate changes the rate and burst for the whole fleet's keys as this
// probe sees them, and for the fallback. Keys already in Redis follow at
// once, keeping the tokens they have. Other probes keep their own settings
// until they are told too: give every probe the same.
func (l *Limiter) SetRate(perSecond float64, burst int) {
	l.params.Store(newGCRAParams(perSecond, burst))
	l.fallback.SetRate(perSecond, burst)
}

// Stats returns the Waits and Denials of this probe (decided by Redis or by
// the fallback). Keys, Tokens and Evictions are the fallback's: the keys in
// Redis belong to the fleet and expire by themselves.
func (l *Limiter) Stats() limiter.Stats {
	st := l.fallback.Stats()
	st.Waits += l.waits.Load()
	st.Denials += l.denials.Load()
	return st
}

// Close makes every Wait in progress, and any later one, return
// [limiter.ErrClosed], and closes the fallback. It does not close the Redis
// client. It always returns nil.
func (l *Limiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.fallback.Close()
}
