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

	"github.com/spyder-crawler/spyder/store"
)

// emittedChunk bounds the members sent in one command, so a large batch
// does not make one huge request.
const emittedChunk = 5000

// DefaultClaimTTL is how long a key [Emitted.Seen] reported new stays
// claimed when it is not marked: long enough for a batch to be written to a
// file or an endpoint, short enough that a probe killed in between holds
// up the others only briefly.
const DefaultClaimTTL = 5 * time.Second

// Emitted is the seen set of the crawl's output shared by a fleet: one
// bucketed table per run (see buckets.lua) under {base}:emitted:{run},
// whose members are the 8-byte prints ([store.KeyPrint]) of the keys
// emitted, as decimal integers, so that each bucket is an intset: 8 bytes
// a key however long the key. The tables have no expiry; [Emitted.DropRun]
// (spyder queue drop-run) deletes a run's once its output is no longer to
// be deduplicated.
//
// Several probes write batches at the same time, and many nodes (a shared
// IP address, certificate or name server) are in several probes' batches.
// Checking and marking alone would let two probes both find such a node new
// and both write it. So Seen also claims the keys it reports new, in the
// hash {base}:emitting:{run} (hash → "<owner> <deadline, Unix ms>"), until
// Mark or ClaimTTL; a probe whose keys another probe has claimed waits for
// that probe's Mark (the keys are then seen) instead of writing them too. A
// batch takes its claims all at once or not at all, so two probes never
// wait on each other. A claim that outlives ClaimTTL (its probe died
// between Seen and Mark, or its write was slower) is taken over, and the
// node may then be written twice: at-least-once, never lost.
//
// Each Emitted is one owner: give each output writer its own. It is safe
// for concurrent use, but concurrent batches through one Emitted do not
// wait for each other's claims.
type Emitted struct {
	client redis.UniversalClient
	base   string
	owner  string

	// ClaimTTL is how long a key reported new stays claimed without a Mark;
	// NewEmitted sets DefaultClaimTTL.
	ClaimTTL time.Duration
}

var _ store.Emitted = (*Emitted)(nil)

// NewEmitted returns the seen set under base (the queue's base key, so that
// a hash tag in it keeps the sets in the queue's cluster slot).
func NewEmitted(client redis.UniversalClient, base string) *Emitted {
	var id [8]byte
	rand.Read(id[:])
	return &Emitted{client: client, base: base, owner: hex.EncodeToString(id[:]), ClaimTTL: DefaultClaimTTL}
}

func (e *Emitted) table(run string) string  { return e.base + ":emitted:" + run }
func (e *Emitted) meta(run string) string   { return e.table(run) + "#meta" }
func (e *Emitted) claims(run string) string { return e.base + ":emitting:" + run }

// Seen implements [store.Emitted]. It claims the keys it reports unseen
// (see [Emitted]) and, while another owner's unexpired claim covers any of
// them, waits, polling, until those are marked or the claim expires, or ctx
// ends.
func (e *Emitted) Seen(ctx context.Context, run string, keys []string) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for start := 0; start < len(keys); start += emittedChunk {
		chunk := keys[start:min(len(keys), start+emittedChunk)]
		got, err := e.claim(ctx, run, prints(chunk))
		if err != nil {
			return nil, fmt.Errorf("emitted seen: %w", refusal(err))
		}
		out = append(out, got...)
	}
	return out, nil
}

//go:embed emitclaim.lua
var emitClaimLua string

var emitClaimScript = redis.NewScript(bucketsLua + emitClaimLua)

//go:embed emitmark.lua
var emitMarkLua string

var emitMarkScript = redis.NewScript(bucketsLua + emitMarkLua)

// Poll bounds of a Seen that waits for another owner's claims.
const (
	claimPollMin = 2 * time.Millisecond
	claimPollMax = 50 * time.Millisecond
)

// claim runs emitclaim.lua on hs until no other owner's claim is in the
// way, taking claims over once ClaimTTL has passed.
func (e *Emitted) claim(ctx context.Context, run string, hs []any) ([]bool, error) {
	ttl := e.ClaimTTL
	if ttl <= 0 {
		ttl = DefaultClaimTTL
	}
	args := append([]any{e.owner, ttl.Milliseconds(), "0"}, hs...)
	giveUp := time.Now().Add(ttl)
	poll := claimPollMin
	for {
		if time.Now().After(giveUp) {
			args[2] = "1"
		}
		res, err := emitClaimScript.Run(ctx, e.client, []string{e.meta(run), e.claims(run)}, args...).Int64Slice()
		if err != nil {
			return nil, err
		}
		if len(res) != len(hs) {
			return nil, fmt.Errorf("%d answers for %d keys", len(res), len(hs))
		}
		if !slices.Contains(res, 2) {
			seen := make([]bool, len(res))
			for i, r := range res {
				seen[i] = r == 1
			}
			return seen, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		poll = min(2*poll, claimPollMax)
	}
}

// Mark implements [store.Emitted]: it adds keys to the run's table and
// drops their claims, in one script call per chunk.
func (e *Emitted) Mark(ctx context.Context, run string, keys []string) error {
	for start := 0; start < len(keys); start += emittedChunk {
		ps := prints(keys[start:min(len(keys), start+emittedChunk)])
		if err := emitMarkScript.Run(ctx, e.client, []string{e.meta(run), e.claims(run)}, ps...).Err(); err != nil {
			return fmt.Errorf("emitted mark: %w", refusal(err))
		}
	}
	return nil
}

// DropRun deletes run's emitted table and claims (and the set an older
// spyder kept for it), so that its output is no longer deduplicated, and
// returns how many keys the table held. A probe still writing that run
// would write again what it meets: drop a run once it is finished.
func (e *Emitted) DropRun(ctx context.Context, run string) (int64, error) {
	n, err := e.client.HGet(ctx, e.meta(run), "n").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("drop run %s: %w", run, refusal(err))
	}
	if _, err := dropTable(ctx, e.client, e.table(run)); err != nil {
		return 0, fmt.Errorf("drop run %s: %w", run, err)
	}
	old, err := e.client.SCard(ctx, e.table(run)).Result()
	if err != nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		return 0, fmt.Errorf("drop run %s: %w", run, refusal(err))
	}
	if err := e.client.Unlink(ctx, e.table(run), e.claims(run)).Err(); err != nil {
		return 0, fmt.Errorf("drop run %s: %w", run, refusal(err))
	}
	return n + old, nil
}

// prints returns the prints of keys as decimal signed integers, the form
// Redis keeps in an intset.
func prints(keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = strconv.FormatInt(int64(store.KeyPrint(k)), 10)
	}
	return out
}
