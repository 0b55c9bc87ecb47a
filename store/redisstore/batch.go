package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// batcher coalesces concurrent calls of one operation into few round trips:
// each of a few loops takes the first waiting call, adds whatever else is
// already waiting (up to a weight limit), runs them as one script call and
// hands each caller its own result. Under load a batch grows to the number of
// callers waiting; a lone caller pays no extra latency, since nothing waits
// for a timer.
type batcher[Req, Res any] struct {
	calls  chan *call[Req, Res]
	weight func(Req) int
	limit  int
	run    func(ctx context.Context, reqs []Req) ([]Res, error)
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
		calls:  make(chan *call[Req, Res], 1024),
		weight: weight,
		limit:  limit,
		run:    run,
		stop:   make(chan struct{}),
	}
	for range loops {
		b.wg.Go(b.loop)
	}
	return b
}

// do runs req in some batch and returns its result. When ctx ends or the
// batcher stops before a loop took the call, it returns ctx's error or
// errStopped and req is not run; once taken, do waits for the outcome (one
// round trip, bounded by the client's timeouts).
func (b *batcher[Req, Res]) do(ctx context.Context, req Req) (Res, error) {
	c := &call[Req, Res]{req: req, done: make(chan result[Res], 1)}
	var zero Res
	select {
	case b.calls <- c:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-b.stop:
		return zero, errStopped
	}
	select {
	case r := <-c.done:
		return r.res, r.err
	case <-ctx.Done():
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return zero, ctx.Err()
		}
	case <-b.stop:
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return zero, errStopped
		}
	}
	r := <-c.done
	return r.res, r.err
}

func (b *batcher[Req, Res]) loop() {
	var batch []*call[Req, Res]
	for {
		batch = batch[:0]
		w := 0
		take := func(c *call[Req, Res]) {
			if c.state.CompareAndSwap(callWaiting, callTaken) {
				batch = append(batch, c)
				w += b.weight(c.req)
			}
		}
		select {
		case c := <-b.calls:
			take(c)
		case <-b.stop:
			return
		}
	more:
		for w < b.limit {
			select {
			case c := <-b.calls:
				take(c)
			default:
				break more
			}
		}
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
// waiting get errStopped.
func (b *batcher[Req, Res]) close() {
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
