package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
)

// probeChunk is how many hosts one Queued script call takes, and
// requeueScan about how many records one Requeue step reads.
const (
	probeChunk  = 1000
	requeueScan = 1000
)

//go:embed queued.lua
var queuedLua string

var queuedScript = redis.NewScript(bucketsLua + queuedLua)

// Queued implements [queue.Worker.Queued]: one script call per chunk.
func (s *Store) Queued(ctx context.Context, hosts []host.Name) ([]bool, error) {
	out := make([]bool, 0, len(hosts))
	for len(hosts) > 0 {
		chunk := hosts[:min(len(hosts), probeChunk)]
		hosts = hosts[len(chunk):]
		args := make([]any, len(chunk))
		for i, h := range chunk {
			args[i] = string(h)
		}
		v, err := s.run(ctx, "queued", queuedScript, []string{s.k.hostsMeta}, args...)
		if err != nil {
			return nil, err
		}
		r, _ := v.([]any)
		if len(r) != len(chunk) {
			return nil, fmt.Errorf("queued: %d answers for %d hosts", len(r), len(chunk))
		}
		for _, x := range r {
			out = append(out, toInt64(x) == 1)
		}
	}
	return out, nil
}

//go:embed requeue.lua
var requeueLua string

var requeueScript = redis.NewScript(bucketsLua + requeueLua)

// Requeue implements [queue.Admin.Requeue]: one script call per few
// buckets of the host table (about requeueScan records), each atomic, so concurrent callers never move a host twice. A
// cancelled ctx stops it between steps; the count moved so far is returned
// with the error.
func (s *Store) Requeue(ctx context.Context, sel queue.Selector) (int, error) {
	var before int64
	if !sel.Before.IsZero() {
		before = max(sel.Before.Unix(), 1)
	}
	args := []any{int64(0), requeueScan, strconv.FormatInt(s.wallNow().Unix(), 10), before}
	for _, o := range sel.Outcomes {
		args = append(args, o)
	}
	moved := 0
	for {
		v, err := s.run(ctx, "requeue", requeueScript, []string{s.k.pending, s.k.hostsMeta}, args...)
		if err != nil {
			return moved, err
		}
		r, _ := v.([]any)
		if len(r) != 2 {
			return moved, fmt.Errorf("requeue: %d values, want 2", len(r))
		}
		moved += int(toInt64(r[1]))
		cursor := toInt64(r[0])
		if cursor < 0 {
			return moved, nil
		}
		args[0] = cursor
	}
}
