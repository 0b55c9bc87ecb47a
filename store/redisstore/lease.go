package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"spyder/queue"
)

// maxBatch bounds the items one script call leases or acks.
const maxBatch = 1000

// op is one caller's part of a batched call of leaseack.lua: the acks of
// the leases whose members are acks, or else a lease of n items for ttlMs.
type op struct {
	acks  []string
	n     int
	ttlMs int64
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
		t := time.NewTimer(min(backoff, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

//go:embed leaseack.lua
var leaseAckLua string

var leaseAckScript = redis.NewScript(leaseAckLua)

// hotBatch runs one leaseack.lua call for several callers of Ack and Lease,
// sends leased items that do not decode to dead, and hands each caller its
// own result.
func (s *Store) hotBatch(ctx context.Context, ops []op) ([]opRes, error) {
	var acks, leases []int // indexes into ops
	nack := 0
	for i, o := range ops {
		if o.acks != nil {
			acks = append(acks, i)
			nack += len(o.acks)
		} else {
			leases = append(leases, i)
		}
	}
	args := make([]any, 0, 3+nack+2*len(leases))
	args = append(args, s.hotSeq.Add(1), s.nowArg(), nack)
	for _, i := range acks {
		for _, m := range ops[i].acks {
			args = append(args, m)
		}
	}
	// Callers with the same TTL share one (count, ttl) pair: the script
	// then makes one deadline per pair, not per caller. Items still come
	// back in callers' order, which is how they are handed out below.
	for k, i := range leases {
		if k > 0 && ops[i].ttlMs == ops[leases[k-1]].ttlMs {
			args[len(args)-2] = args[len(args)-2].(int) + ops[i].n
			continue
		}
		args = append(args, ops[i].n, ops[i].ttlMs)
	}
	v, err := s.run(ctx, "lease/ack", leaseAckScript, []string{s.k.pending, s.k.leases, s.k.leaseSeq, s.replies}, args...)
	if err != nil {
		return nil, err
	}
	reply, _ := v.([]any)
	if len(reply) < 1+nack {
		return nil, fmt.Errorf("redisstore: lease/ack: short reply")
	}
	out := make([]opRes, len(ops))
	held := make([]bool, nack) // one array for every caller's answers
	for k := range held {
		held[k] = toInt64(reply[1+k]) == 1
	}
	for _, i := range acks {
		n := len(ops[i].acks)
		out[i].acked, held = held[:n:n], held[n:]
	}
	now := time.UnixMilli(toInt64(reply[0]))
	var bury []any // finish triples sending undecodable items to dead
	r, left := -1, 0
	for k := 1 + nack; k < len(reply); k++ {
		for left == 0 {
			r++
			left = ops[leases[r]].n
		}
		left--
		i := leases[r]
		id, rawStr, ok := strings.Cut(toString(reply[k]), " ")
		if !ok {
			return nil, fmt.Errorf("redisstore: lease/ack: malformed lease member %q", toString(reply[k]))
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
			Deadline: now.Add(time.Duration(ops[i].ttlMs) * time.Millisecond),
		})
	}
	if len(bury) > 0 {
		// On error the undecodable items stay leased under IDs nobody holds:
		// Reclaim brings them back and the next Lease buries them. The
		// decoded ones are the callers' either way.
		_, _ = s.finish(ctx, "lease: bury undecodable", bury)
		for _, i := range leases {
			out[i].buried = true
		}
	}
	return out, nil
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
