package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// batcher coalesces concurrent calls of one operation into few round trips:
// each of a few loops takes the calls waiting (up to a weight limit), runs
// them as one script call and hands each caller its own result. Under load a
// batch grows to the number of callers waiting; a lone caller pays no extra
// latency, since nothing waits for a timer.
//
// Callers queue under a mutex and wait on their own channel only: nothing
// every caller selects on is shared, which with hundreds of callers costs
// more than the round trips it batches.
type batcher[Req, Res any] struct {
	weight func(Req) int
	limit  int
	run    func(ctx context.Context, reqs []Req) ([]Res, error)

	mu     sync.Mutex
	queue  []*call[Req, Res]
	closed bool
	calls  sync.Pool     // of *call, reused once answered
	wake   chan struct{} // a call was queued into an empty queue
	stop   chan struct{}
	wg     sync.WaitGroup
}

// call is one caller's request. state moves from waiting to taken (a loop
// will run it and reply) or to abandoned (the caller gave up before any loop
// took it, so it is never run): a caller that gets an error from ctx was
// therefore never served, and one that was served always gets the result.
type call[Req, Res any] struct {
	req   Req
	state atomic.Int32
	done  chan result[Res]
}

const (
	callWaiting int32 = iota
	callTaken
	callAbandoned
)

type result[Res any] struct {
	res Res
	err error
}

// newBatcher starts loops goroutines running batches; stop them with close.
func newBatcher[Req, Res any](loops, limit int, weight func(Req) int,
	run func(ctx context.Context, reqs []Req) ([]Res, error)) *batcher[Req, Res] {
	b := &batcher[Req, Res]{
		weight: weight,
		limit:  limit,
		run:    run,
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
	for range loops {
		b.wg.Go(b.loop)
	}
	return b
}

// do runs req in some batch and returns its result. When ctx ends before a
// loop took the call, it returns ctx's error and req is not run; once taken,
// do waits for the outcome (one round trip, bounded by the client's
// timeouts). After close it returns errStopped.
func (b *batcher[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	c, _ := b.calls.Get().(*call[Req, Res])
	if c == nil {
		c = &call[Req, Res]{done: make(chan result[Res], 1)}
	}
	c.req = req
	c.state.Store(callWaiting)
	var zero Res
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return zero, errStopped
	}
	b.queue = append(b.queue, c)
	first := len(b.queue) == 1
	b.mu.Unlock()
	if first {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	done := ctx.Done()
	if done == nil {
		return b.recycle(c, <-c.done)
	}
	select {
	case r := <-c.done:
		return b.recycle(c, r)
	case <-done:
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return zero, ctx.Err() // c may still sit in the queue: not recycled
		}
	}
	return b.recycle(c, <-c.done)
}

// recycle returns c, answered and referenced by no loop any more, to the
// pool: with hundreds of callers, a call and its channel per request were
// a third of what the hot path allocated.
func (b *batcher[Req, Res]) recycle(c *call[Req, Res], r result[Res]) (Res, error) {
	var zero Req
	c.req = zero
	b.calls.Put(c)
	return r.res, r.err
}

// take removes the calls of the next batch from the queue.
func (b *batcher[Req, Res]) take() []*call[Req, Res] {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*call[Req, Res]
	w, i := 0, 0
	for ; i < len(b.queue) && w < b.limit; i++ {
		c := b.queue[i]
		if c.state.CompareAndSwap(callWaiting, callTaken) {
			batch = append(batch, c)
			w += b.weight(c.req)
		}
	}
	rest := copy(b.queue, b.queue[i:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	if rest > 0 {
		select { // more for the next loop (or this one, next time round)
		case b.wake <- struct{}{}:
		default:
		}
	}
	return batch
}

func (b *batcher[Req, Res]) loop() {
	for {
		select {
		case <-b.wake:
		case <-b.stop:
			return
		}
		batch := b.take()
		if len(batch) == 0 {
			continue
		}
		reqs := make([]Req, len(batch))
		for i, c := range batch {
			reqs[i] = c.req
		}
		res, err := b.run(context.Background(), reqs)
		for i, c := range batch {
			if err != nil {
				c.done <- result[Res]{err: err}
			} else {
				c.done <- result[Res]{res: res[i]}
			}
		}
	}
}

// close stops the loops after the batches they are running; calls still
// queued get errStopped.
func (b *batcher[Req, Res]) close() {
	b.mu.Lock()
	b.closed = true
	queued := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, c := range queued { // out of the queue: no loop can take them now
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			c.done <- result[Res]{err: errStopped}
		}
	}
	close(b.stop)
	b.wg.Wait()
}

// batchErr is the error of a batched call of op: batches return errors
// already translated by the script runner, so only errStopped is left.
func batchErr(op string, err error) error {
	if errors.Is(err, errStopped) {
		return interpret(op, err)
	}
	return err
}
