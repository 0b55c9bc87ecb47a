package redisstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// blockingBatcher runs batches of ints, echoing each doubled; the first
// batch blocks until release is closed. It records every batch run.
func blockingBatcher(t *testing.T) (b *batcher[int, int], started, release chan struct{}, ran func() [][]int) {
	var (
		mu      sync.Mutex
		batches [][]int
		once    sync.Once
	)
	started, release = make(chan struct{}), make(chan struct{})
	b = newBatcher(1, 100, func(int) int { return 1 }, func(_ context.Context, reqs []int) ([]int, error) {
		mu.Lock()
		batches = append(batches, slices.Clone(reqs))
		mu.Unlock()
		once.Do(func() { close(started); <-release })
		out := make([]int, len(reqs))
		for i, r := range reqs {
			out[i] = 2 * r
		}
		return out, nil
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return b, started, release, func() [][]int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(batches)
	}
}

// waitQueued waits until n calls are queued.
func waitQueued[Req, Res any](t *testing.T, b *batcher[Req, Res], n int) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		q := len(b.queue)
		b.mu.Unlock()
		if q >= n {
			return
		}
	}
	t.Fatalf("%d calls never queued", n)
}

func TestBatcher_CoalescesWaitingCalls(t *testing.T) {
	b, started, release, ran := blockingBatcher(t)
	defer b.close()
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.do(ctx, 100) })
	<-started
	got := make([]int, 10)
	for i := range 10 {
		wg.Go(func() {
			r, err := b.do(ctx, i)
			if err != nil {
				t.Errorf("do(%d) error: %v", i, err)
			}
			got[i] = r
		})
	}
	waitQueued(t, b, 10)
	close(release)
	wg.Wait()
	if batches := ran(); len(batches) != 2 || len(batches[1]) != 10 {
		t.Errorf("batches = %v, want [100] then the 10 waiting calls in one", batches)
	}
	for i, r := range got {
		if r != 2*i {
			t.Errorf("do(%d) = %d, want %d", i, r, 2*i)
		}
	}
}

func TestBatcher_CancelledBeforeTakenIsNotRun(t *testing.T) {
	b, started, release, ran := blockingBatcher(t)
	defer b.close()
	go func() { _, _ = b.do(context.Background(), 1) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := b.do(ctx, 2); errc <- err }()
	waitQueued(t, b, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("do(cancelled) error = %v, want context.Canceled", err)
	}
	close(release)
	r, err := b.do(context.Background(), 3)
	if err != nil || r != 6 {
		t.Errorf("do(3) = %d, %v; want 6", r, err)
	}
	for _, batch := range ran() {
		if slices.Contains(batch, 2) {
			t.Errorf("batches %v ran the cancelled call", ran())
		}
	}
}

func TestBatcher_CloseFailsQueuedCalls(t *testing.T) {
	b, started, release, ran := blockingBatcher(t)
	first := make(chan error)
	go func() { _, err := b.do(context.Background(), 1); first <- err }()
	<-started
	queued := make(chan error)
	go func() { _, err := b.do(context.Background(), 2); queued <- err }()
	waitQueued(t, b, 1)
	closed := make(chan struct{})
	go func() { b.close(); close(closed) }()
	if err := <-queued; !errors.Is(err, errStopped) {
		t.Errorf("queued do() at close error = %v, want errStopped", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("running do() at close error = %v, want its result", err)
	}
	<-closed
	if _, err := b.do(context.Background(), 3); !errors.Is(err, errStopped) {
		t.Errorf("do() after close error = %v, want errStopped", err)
	}
	if batches := ran(); len(batches) != 1 {
		t.Errorf("batches = %v, want only the first", batches)
	}
}
