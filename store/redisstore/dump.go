package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// dumpChunk is how many elements Dump reads and Load writes per round trip.
const dumpChunk = 1000

//go:embed snapshot.lua
var snapshotLua string

var snapshotScript = redis.NewScript(bucketsLua + snapshotLua)

// Dump implements [queue.Queue] on a consistent snapshot: one script copies
// the state keys server-side, Dump reads the copies in chunks and deletes
// them. Items an older worker left in the legacy processing list come out
// as processing records with lease IDs "legacy-1", "legacy-2", … and the
// deadline their reclaim is due (first noticed, or now, plus the default
// lease TTL); bytes that do not decode come out as raw pending records.
func (s *Store) Dump(ctx context.Context, fn func(queue.Record) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	snap, now, drop, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	defer drop()
	if err := s.dumpPending(ctx, snap, fn); err != nil {
		return err
	}
	if err := s.dumpProcessing(ctx, snap, now, fn); err != nil {
		return err
	}
	if err := s.dumpDead(ctx, snap, fn); err != nil {
		return err
	}
	return s.dumpSeen(ctx, snap, fn)
}

// snapshot copies the queue's state into fresh keys beside it in one
// script call, so a dump reads one moment of a queue that goes on
// changing. It returns those keys, the server's time of the copy, and drop,
// which deletes the copy (the host table's buckets first: their count is
// in its meta key).
func (s *Store) snapshot(ctx context.Context) (snap keys, now time.Time, drop func(), err error) {
	if snap, err = s.tempKeys("dump"); err != nil {
		return keys{}, time.Time{}, nil, err
	}
	from, to := s.k.state(), snap.state()
	drop = func() {
		c := context.WithoutCancel(ctx)
		s.dropTable(c, snap.hosts)
		s.c.Del(c, to...)
	}
	v, err := s.run(ctx, "dump", snapshotScript, append(from, to...), 3600, s.k.hostsMeta, snap.hostsMeta)
	if err != nil {
		drop()
		return keys{}, time.Time{}, nil, err
	}
	return snap, time.UnixMilli(toInt64(v)), drop, nil
}

// tempKeys returns a fresh set of keys beside the queue's (same hash tag).
func (s *Store) tempKeys(what string) (keys, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return keys{}, fmt.Errorf("%s: %w", what, err)
	}
	return newKeys(s.base + ":" + what + "-" + hex.EncodeToString(b[:])), nil
}

// itemRecord is the record of stored item bytes of kind: the decoded item,
// or the bytes themselves when they do not decode.
func itemRecord(kind string, raw []byte) queue.Record {
	if it, err := queue.DecodeItem(raw); err == nil {
		return queue.Record{Kind: kind, Item: &it}
	}
	return queue.Record{Kind: kind, Raw: raw}
}

func (s *Store) dumpPending(ctx context.Context, snap keys, fn func(queue.Record) error) error {
	n, err := s.c.LLen(ctx, snap.pending).Result()
	if err != nil {
		return s.interpret(ctx, "dump", err)
	}
	for hi := n - 1; hi >= 0; hi -= dumpChunk { // oldest (rightmost) first
		items, err := s.c.LRange(ctx, snap.pending, max(0, hi-dumpChunk+1), hi).Result()
		if err != nil {
			return s.interpret(ctx, "dump", err)
		}
		slices.Reverse(items)
		for _, raw := range items {
			if err := fn(itemRecord(queue.KindPending, []byte(raw))); err != nil {
				return err
			}
		}
	}
	return nil
}

// leaseDeadline is the deadline of a lease with the given score. A score
// no deadline of spyder's has (not positive, infinite or past year 9999,
// written by another program) is dumped as long expired, which is how
// Reclaim treats it, so that the export stays importable.
func leaseDeadline(score float64) time.Time {
	const maxMs = 253402300799999        // 9999-12-31T23:59:59.999Z
	if !(score >= 1 && score <= maxMs) { // NaN fails both
		return time.UnixMilli(1)
	}
	return time.UnixMilli(int64(score))
}

func (s *Store) dumpProcessing(ctx context.Context, snap keys, now time.Time, fn func(queue.Record) error) error {
	for start := int64(0); ; start += dumpChunk {
		zs, err := s.c.ZRangeWithScores(ctx, snap.leases, start, start+dumpChunk-1).Result()
		if err != nil {
			return s.interpret(ctx, "dump", err)
		}
		if len(zs) == 0 {
			break
		}
		for _, z := range zs {
			id, raw, ok := strings.Cut(z.Member.(string), " ")
			if !ok { // not a lease: keep the member whole
				raw = id
			}
			r := itemRecord(queue.KindProcessing, []byte(raw))
			if r.Item == nil {
				r.Kind = queue.KindPending // leased, and dead when settled
			} else {
				r.LeaseID, r.Deadline = id, leaseDeadline(z.Score)
			}
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	legacy, err := s.c.LRange(ctx, snap.legacy, 0, -1).Result()
	if err != nil {
		return s.interpret(ctx, "dump", err)
	}
	for i, raw := range legacy {
		r := itemRecord(queue.KindProcessing, []byte(raw))
		if r.Item == nil {
			r.Kind = queue.KindPending
		} else {
			due := now
			if ms, err := s.c.HGet(ctx, snap.legacySeen, raw).Int64(); err == nil {
				due = time.UnixMilli(ms)
			}
			r.LeaseID = "legacy-" + strconv.Itoa(i+1)
			r.Deadline = due.Add(queue.DefaultLeaseTTL)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) dumpDead(ctx context.Context, snap keys, fn func(queue.Record) error) error {
	for start := int64(0); ; start += dumpChunk {
		entries, err := s.c.LRange(ctx, snap.dead, start, start+dumpChunk-1).Result()
		if err != nil {
			return s.interpret(ctx, "dump", err)
		}
		if len(entries) == 0 {
			return nil
		}
		for _, e := range entries {
			d := decodeDead([]byte(e))
			r := queue.Record{Kind: queue.KindDead, Item: d.Item, Error: d.Error, At: d.At}
			if d.Item == nil {
				r.Raw = d.Raw
			}
			if err := fn(r); err != nil {
				return err
			}
		}
	}
}

// dumpSeen writes a seen record for every host of the snapshot's host
// table: with its last probe when it is done, bare when it is queued or
// dead (see hostRecords for how Load reads them back).
func (s *Store) dumpSeen(ctx context.Context, snap keys, fn func(queue.Record) error) error {
	nb, err := s.tableBuckets(ctx, snap.hosts)
	if err != nil {
		return err
	}
	for first := int64(0); first <= nb; first += dumpChunk / hostLoad {
		pipe := s.c.Pipeline()
		var cmds []*redis.MapStringStringCmd
		for i := first; i < min(nb+1, first+dumpChunk/hostLoad); i++ {
			key := snap.hosts + "#long" // after the last bucket
			if i < nb {
				key = bucketKey(snap.hosts, i)
			}
			cmds = append(cmds, pipe.HGetAll(ctx, key))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return s.interpret(ctx, "dump", err)
		}
		for _, c := range cmds {
			hosts := c.Val()
			names := make([]string, 0, len(hosts))
			for h := range hosts {
				names = append(names, h)
			}
			slices.Sort(names)
			for _, h := range names {
				r := queue.Record{Kind: queue.KindSeen, Host: host.Name(h)}
				if p, err := queue.ParseVisit(r.Host, hosts[h]); err == nil {
					r.At, r.Outcome = p.At, p.Outcome
				}
				if err := fn(r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

//go:embed load.lua
var loadLua string

var loadScript = redis.NewScript(bucketsLua + loadLua)

//go:embed hostput.lua
var hostPutLua string

var hostPutScript = redis.NewScript(bucketsLua + hostPutLua)

// Load implements [queue.Queue] atomically: the records are written to
// staging keys in chunks, then one script renames them into place if the
// queue is still empty (else nothing changes and it returns
// queue.ErrNotEmpty). Lease IDs and deadlines are kept, so a holder can
// still ack; items are stored in their canonical encoding.
func (s *Store) Load(ctx context.Context, recs []queue.Record) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	n, err := s.c.Exists(ctx, s.k.state()...).Result()
	if err != nil {
		return interpret("load", err)
	}
	if n > 0 {
		return queue.ErrNotEmpty
	}
	stage, err := s.tempKeys("load")
	if err != nil {
		return err
	}
	staged := stage.state()
	defer s.c.Del(context.WithoutCancel(ctx), staged...)
	defer s.dropTable(context.WithoutCancel(ctx), stage.hosts)
	var maxSeq int64
	pipe := s.c.Pipeline()
	for i, r := range recs {
		switch r.Kind {
		case queue.KindPending:
			raw := r.Raw
			if r.Item != nil {
				raw = r.Item.Encode()
			}
			pipe.LPush(ctx, stage.pending, raw)
		case queue.KindProcessing:
			if r.Item == nil || r.LeaseID == "" || strings.ContainsAny(r.LeaseID, " ") {
				return fmt.Errorf("load: record %d: processing needs an item and a lease ID without spaces", i)
			}
			pipe.ZAdd(ctx, stage.leases, redis.Z{Score: float64(r.Deadline.UnixMilli()), Member: member(r.LeaseID, r.Item.Encode())})
			if seq, _, ok := strings.Cut(r.LeaseID, "-"); ok {
				if n, err := strconv.ParseInt(seq, 10, 64); err == nil {
					maxSeq = max(maxSeq, n)
				}
			}
		case queue.KindDead:
			raw, decoded := r.Raw, r.Item != nil
			if decoded {
				raw = r.Item.Encode()
			}
			pipe.RPush(ctx, stage.dead, encodeDead(raw, decoded, r.Error, r.At))
		case queue.KindSeen:
		default:
			return fmt.Errorf("load: record %d: unknown kind %q", i, r.Kind)
		}
		if pipe.Len() >= dumpChunk {
			if _, err := pipe.Exec(ctx); err != nil {
				return interpret("load", err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return interpret("load", err)
	}
	recsOf := hostRecords(recs)
	for len(recsOf) > 0 {
		chunk := recsOf[:min(len(recsOf), 2*dumpChunk)]
		recsOf = recsOf[len(chunk):]
		if _, err := s.run(ctx, "load", hostPutScript, []string{stage.hostsMeta}, chunk...); err != nil {
			return err
		}
	}
	keys := append(append(s.k.state(), staged...), s.k.leaseSeq)
	v, err := s.run(ctx, "load", loadScript, keys, maxSeq, s.k.hostsMeta, stage.hostsMeta)
	if err != nil {
		return err
	}
	if toInt64(v) != 1 {
		return queue.ErrNotEmpty
	}
	return nil
}
