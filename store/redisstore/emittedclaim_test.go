package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestEmitted_FleetWritesEachKeyOnce runs the batcher's protocol (Seen,
// write, Mark) from several owners at once over overlapping keys, as probes
// of a fleet do with shared IP addresses and name servers: each key is
// reported new to exactly one of them. Checking and marking alone (no
// claims) reports many keys new twice here.
func TestEmitted_FleetWritesEachKeyOnce(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	base := redistest.Prefix(t)
	ctx := context.Background()
	const owners, batches, perBatch, keySpace = 4, 60, 40, 300
	var mu sync.Mutex
	fresh := map[string]int{}
	var wg sync.WaitGroup
	for o := range owners {
		e := redisstore.NewEmitted(c, base)
		wg.Go(func() {
			for b := range batches {
				keys := make([]string, perBatch)
				for i := range keys {
					keys[i] = fmt.Sprintf("ip-%d", (o*7+b*13+i*31)%keySpace)
				}
				seen, err := e.Seen(ctx, "run", keys)
				if err != nil {
					t.Errorf("Seen: %v", err)
					return
				}
				var marked []string
				mu.Lock()
				for i, s := range seen {
					if !s {
						fresh[keys[i]]++
						marked = append(marked, keys[i])
					}
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // the batch's write
				if err := e.Mark(ctx, "run", marked); err != nil {
					t.Errorf("Mark: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	for k, n := range fresh {
		if n != 1 {
			t.Errorf("key %s reported new %d times, want once", k, n)
		}
	}
	if n, _ := c.Exists(ctx, base+":emitting:run").Result(); n != 0 {
		t.Errorf("claims hash left behind after every claim was marked")
	}
}

// TestEmitted_ClaimWaitsForMark: a key another owner reported new is waited
// for, and is seen once that owner marks it.
func TestEmitted_ClaimWaitsForMark(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	base := redistest.Prefix(t)
	ctx := context.Background()
	a, b := redisstore.NewEmitted(c, base), redisstore.NewEmitted(c, base)
	if got, err := a.Seen(ctx, "run", []string{"k", "a-only"}); err != nil || got[0] || got[1] {
		t.Fatalf("a.Seen(k, a-only) = %v, %v, want [false false]", got, err)
	}
	done := make(chan []bool, 1)
	go func() {
		got, err := b.Seen(ctx, "run", []string{"b-only", "k"})
		if err != nil {
			t.Errorf("b.Seen: %v", err)
		}
		done <- got
	}()
	select {
	case got := <-done:
		t.Fatalf("b.Seen(b-only, k) = %v while a holds k's claim, want it to wait", got)
	case <-time.After(200 * time.Millisecond):
	}
	if err := a.Mark(ctx, "run", []string{"k", "a-only"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got[0] || !got[1] {
			t.Errorf("b.Seen(b-only, k) after a marked k = %v, want [false true]", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b.Seen still waiting 10s after a marked k")
	}
	// An owner is never held up by its own claims (a batch that failed to
	// be written is built again by the same batcher).
	if got, err := b.Seen(ctx, "run", []string{"b-only"}); err != nil || got[0] {
		t.Errorf("b.Seen(b-only) again = %v, %v, want [false]", got, err)
	}
}

// TestEmitted_ClaimExpires: a claim never marked (its probe died between
// writing and marking) stops holding others up after ClaimTTL.
func TestEmitted_ClaimExpires(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	base := redistest.Prefix(t)
	ctx := context.Background()
	a, b := redisstore.NewEmitted(c, base), redisstore.NewEmitted(c, base)
	a.ClaimTTL, b.ClaimTTL = 300*time.Millisecond, time.Minute
	if got, err := a.Seen(ctx, "run", []string{"k"}); err != nil || got[0] {
		t.Fatalf("a.Seen(k) = %v, %v, want [false]", got, err)
	}
	start := time.Now()
	got, err := b.Seen(ctx, "run", []string{"k"})
	if err != nil || got[0] {
		t.Fatalf("b.Seen(k) after a's claim expired = %v, %v, want [false]", got, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("b.Seen(k) waited %v for a claim of 300ms", d)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := a.Seen(cctx, "run", []string{"k"}); err == nil {
		t.Errorf("a.Seen(k) while b holds a 1m claim returned before its ctx ended")
	}
}
