package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

//go:embed stats.lua
var statsLua string

var statsScript = redis.NewScript(preludeLua + statsLua)

// Stats implements [queue.Queue]. Processing counts held leases plus items
// an older worker left in the legacy processing list. OldestLeaseAge is
// read from the 1,000 leases closest to their deadline (exact unless a
// lease was extended past that many others), so a Stats call stays cheap
// however many leases are held.
func (s *Store) Stats(ctx context.Context) (queue.Stats, error) {
	v, err := s.run(ctx, "stats", statsScript,
		[]string{s.k.pending, s.k.legacy, s.k.dead, s.k.hostsMeta, s.k.leases}, s.nowArg())
	if err != nil {
		return queue.Stats{}, err
	}
	r, _ := v.([]any)
	if len(r) != 6 {
		return queue.Stats{}, fmt.Errorf("stats: %d values, want 6", len(r))
	}
	st := queue.Stats{
		Pending:    toInt64(r[0]),
		Processing: toInt64(r[1]),
		Dead:       toInt64(r[2]),
		Seen:       toInt64(r[3]),
	}
	if oldest := toInt64(r[5]); oldest >= 0 {
		st.OldestLeaseAge = max(time.UnixMilli(toInt64(r[4])).Sub(time.UnixMilli(oldest)), 0)
	}
	return st, nil
}
