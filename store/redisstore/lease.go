package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// maxBatch bounds the items one script call leases or acks.
const maxBatch = 1000

// op is one caller's part of a batched call of leaseack.lua: the probes
// to keep, as (host, probe) pairs, with their hosts' hashes packed in
// hashes (appendHostHash), and the acks of the leases whose members are
// acks; or else (n > 0) a lease of n items for ttlMs.
type op struct {
	probes []string
	hashes []byte
	acks   []string
	n      int
	ttlMs  int64
}

// opRes is what a caller gets back from a batched call: whether each ack's
// lease was held, or the leases. buried reports that the batch met
// undecodable items, so an empty lease does not mean the queue is empty.
type opRes struct {
	acked  []bool
	leases []queue.Lease
	buried bool
}

// Lease implements [queue.Queue]. It polls while the queue is empty, backing
// off from 2ms to 100ms, until wait has passed or ctx ends; concurrent calls
// share script calls (see [Store]).
func (s *Store) Lease(ctx context.Context, n int, ttl, wait time.Duration) ([]queue.Lease, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	req := op{n: min(n, maxBatch), ttlMs: ttlMillis(ttl)}
	until := time.Now().Add(wait)
	backoff := 2 * time.Millisecond
	for {
		res, err := s.hot.do(ctx, req)
		if err != nil {
			return nil, batchErr("lease", err)
		}
		if len(res.leases) > 0 {
			return res.leases, nil
		}
		if res.buried {
			continue // undecodable items were in the way; more may follow
		}
		left := time.Until(until)
		if left <= 0 {
			return nil, nil
		}
		if backoff, err = pollPause(ctx, backoff, left); err != nil {
			return nil, err
		}
	}
}

// pollPause waits d, or left if that is shorter, between two polls of an
// empty queue, and returns the next wait: twice d, up to 100ms. It returns
// ctx's error if ctx ends first.
func pollPause(ctx context.Context, d, left time.Duration) (time.Duration, error) {
	t := time.NewTimer(min(d, left))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return d, ctx.Err()
	case <-t.C:
	}
	return min(2*d, 100*time.Millisecond), nil
}

//go:embed leaseack.lua
var leaseAckLua string

// leaseAckScript is leaseack.lua with the host table's helpers, for the
// calls that keep probes; leaseAckBareScript is the same script without
// them, for the calls that keep none (most lease calls). Defining the
// helpers makes a closure each, every call: about as much of the server's
// time as a small call's own work.
var (
	leaseAckScript     = redis.NewScript(preludeLua + bucketsLua + leaseAckLua)
	leaseAckBareScript = redis.NewScript(preludeLua + leaseAckLua)
)

// hotBatch runs one leaseack.lua call for several callers of AckAll and Lease,
// sends leased items that do not decode to dead, and hands each caller its
// own result.
func (s *Store) hotBatch(ctx context.Context, ops []op) ([]opRes, error) {
	p := planHot(ops)
	keys := []string{s.k.pending, s.k.leases, s.k.leaseSeq, s.replies, s.k.hostsMeta}
	sc := leaseAckBareScript
	if p.nprobe > 0 {
		sc = leaseAckScript
	}
	v, err := s.run(ctx, "lease/ack", sc, keys, p.args(s.hotSeq.Add(1), s.nowArg())...)
	if err != nil {
		return nil, err
	}
	reply, _ := v.([]any)
	if len(reply) < 1+p.nack {
		return nil, fmt.Errorf("lease/ack: short reply")
	}
	out := make([]opRes, len(ops))
	p.handAcks(out, reply[1:1+p.nack])
	bury, err := s.handLeases(out, p, toInt64(reply[0]), reply[1+p.nack:])
	if err != nil {
		return nil, err
	}
	if len(bury) > 0 {
		// On error the undecodable items stay leased under IDs nobody holds:
		// Reclaim brings them back and the next Lease buries them. The
		// decoded ones are the callers' either way.
		_, _ = s.finish(ctx, "lease: bury undecodable", bury)
		for _, i := range p.leases {
			out[i].buried = true
		}
	}
	return out, nil
}

// hotPlan is a batch of ops split the way leaseack.lua takes and answers
// them: the ack callers first, then the lease callers, each group in the
// order of ops.
type hotPlan struct {
	ops    []op
	acks   []int // indexes into ops of the callers that ack
	leases []int // indexes into ops of the callers that lease
	nack   int   // members acked in all: the script's A
	nprobe int   // probes kept in all: the script's P
}

// planHot splits ops into ack and lease callers (a lease asks for at
// least one item). Both lists keep the order of ops, which is the order the
// script's reply follows.
func planHot(ops []op) hotPlan {
	p := hotPlan{ops: ops}
	for i, o := range ops {
		if o.n == 0 {
			p.acks = append(p.acks, i)
			p.nack += len(o.acks)
			p.nprobe += len(o.probes) / 2
		} else {
			p.leases = append(p.leases, i)
		}
	}
	return p
}

// args is the script's ARGV for p: the call token, now, A, the members to
// ack caller by caller, P, the probes' hashes packed in one argument, the
// (host, probe) pairs caller by caller, then (count, ttl ms) pairs for the
// lease callers.
// A lease caller with the same TTL as the one before it adds its count to
// that pair: the script then makes one deadline per pair, not per caller.
// Items still come back in callers' order, which is how handLeases hands
// them out.
func (p hotPlan) args(token int64, now string) []any {
	args := make([]any, 0, 5+p.nack+2*p.nprobe+2*len(p.leases))
	args = append(args, token, now, p.nack)
	for _, i := range p.acks {
		for _, m := range p.ops[i].acks {
			args = append(args, m)
		}
	}
	var xs []byte
	for _, i := range p.acks {
		xs = append(xs, p.ops[i].hashes...)
	}
	args = append(args, p.nprobe, xs)
	for _, i := range p.acks {
		for _, v := range p.ops[i].probes {
			args = append(args, v)
		}
	}
	for k, i := range p.leases {
		if k > 0 && p.ops[i].ttlMs == p.ops[p.leases[k-1]].ttlMs {
			args[len(args)-2] = args[len(args)-2].(int) + p.ops[i].n
			continue
		}
		args = append(args, p.ops[i].n, p.ops[i].ttlMs)
	}
	return args
}

// handAcks gives each ack caller in out its slice of results, the script's
// A ack results in the order the members were sent: acked[j] is true when
// the caller's j-th lease was held.
func (p hotPlan) handAcks(out []opRes, results []any) {
	held := make([]bool, len(results)) // one array for every caller's answers
	for k := range held {
		held[k] = toInt64(results[k]) == 1
	}
	for _, i := range p.acks {
		n := len(p.ops[i].acks)
		out[i].acked, held = held[:n:n], held[n:]
	}
}

// handLeases hands the leased members (the reply after the ack results) to
// the lease callers in out, filling each caller's count before the next
// one's, with deadlines from nowMs, the script's clock. A member whose item
// does not decode is not handed out: it goes into the returned finish
// triples, which send it to dead.
func (s *Store) handLeases(out []opRes, p hotPlan, nowMs int64, members []any) ([]any, error) {
	now := time.UnixMilli(nowMs)
	var bury []any
	r, left := -1, 0
	for _, m := range members {
		for left == 0 {
			r++
			left = p.ops[p.leases[r]].n
		}
		left--
		i := p.leases[r]
		id, rawStr, ok := strings.Cut(toString(m), " ")
		if !ok {
			return nil, fmt.Errorf("lease/ack: malformed lease member %q", toString(m))
		}
		raw := []byte(rawStr)
		it, err := queue.DecodeItem(raw)
		if err != nil {
			bury = append(bury, member(id, raw), "dead", s.deadEntry(raw, nil, "undecodable item: "+err.Error()))
			continue
		}
		out[i].leases = append(out[i].leases, queue.Lease{
			Item:     it,
			Raw:      raw,
			ID:       id,
			Deadline: now.Add(time.Duration(p.ops[i].ttlMs) * time.Millisecond),
		})
	}
	return bury, nil
}

// member is a lease's member of the leases sorted set: "<lease ID> <item
// bytes>". Holding the bytes there, not in a second key, halves the work of
// each lease and ack.
func member(id string, raw []byte) string {
	return id + " " + string(raw)
}

// leaseMember is l's member, or "" when l has no ID.
func leaseMember(l queue.Lease) string {
	if l.ID == "" {
		return ""
	}
	return member(l.ID, l.Raw)
}
