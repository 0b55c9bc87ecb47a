package redisstore

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// maxReclaimBatch bounds the items one reclaim script call claims.
const maxReclaimBatch = 1000

//go:embed reclaim.lua
var reclaimLua string

var reclaimScript = redis.NewScript(preludeLua + reclaimLua)

// Reclaim implements [queue.Queue] in two atomic steps per batch of up to
// 1,000 items: reclaim.lua takes expired leases (and legacy items noticed
// at least ttl ago) from their holders under fresh leases of its own, then
// finish.lua puts each back in pending with attempt+1, or in dead, as one
// step. Between the two the items are held, never lost: if this process
// dies there, its own claims expire after ttl and the next Reclaim takes
// them. Items that do not decode go to dead with the reason.
func (s *Store) Reclaim(ctx context.Context, ttl time.Duration, maxAttempts int) (queue.ReclaimResult, error) {
	var res queue.ReclaimResult
	for {
		if err := s.check(ctx); err != nil {
			return res, err
		}
		v, err := s.run(ctx, "reclaim", reclaimScript,
			[]string{s.k.leases, s.k.leaseSeq, s.k.legacy, s.k.legacySeen},
			s.nowArg(), ttlMillis(ttl), maxReclaimBatch)
		if err != nil {
			return res, err
		}
		reply, _ := v.([]any)
		if len(reply) <= 1 {
			return res, nil
		}
		var triples []any
		var hosts []string
		for i := 1; i+1 < len(reply); i += 2 {
			id, raw := toString(reply[i]), []byte(toString(reply[i+1]))
			it, err := queue.DecodeItem(raw)
			if err != nil {
				triples = append(triples, member(id, raw), "dead", s.deadEntry(raw, nil, "undecodable item: "+err.Error()))
				hosts = append(hosts, clip(raw))
				continue
			}
			where, payload := s.retryOrDead(it, "lease expired", maxAttempts)
			triples = append(triples, member(id, raw), where, payload)
			hosts = append(hosts, string(it.Host))
		}
		// Settle even if ctx ends now: claims left unsettled wait out ttl.
		done, err := s.finish(context.WithoutCancel(ctx), "reclaim", triples)
		if err != nil {
			return res, err
		}
		for i, ok := range done {
			switch {
			case !ok:
				// Our own claim was taken: we were slower than its ttl.
			case triples[3*i+1] == "dead":
				res.Dead = append(res.Dead, hosts[i])
			default:
				res.Requeued = append(res.Requeued, hosts[i])
			}
		}
		if len(reply) < 1+2*maxReclaimBatch {
			return res, nil
		}
	}
}
