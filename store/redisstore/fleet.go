package redisstore

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/limiter"
)

// fleet is what both layouts of the queue ([Store] on one node, [Sharded]
// over a cluster) hold alike: the client, the base key every key of the
// fleet is named from, how messages name them, and whether Close closes
// the client. It serves the parts of [store.Backend] that do not depend on
// the layout.
type fleet struct {
	c    redis.UniversalClient
	base string
	// name is what Name reports; ownsClient says Close closes c (the
	// backend made it, in Connect or Dial).
	name       string
	ownsClient bool
}

// Limiters returns the fleet limiter under the base key, which falls back
// to local while Redis is away. Its keys have no hash tag, so a cluster
// spreads them by the limited key itself. It implements [store.Backend].
func (f *fleet) Limiters(local *limiter.Local, rate float64, burst int, log *slog.Logger) limiter.Limiter {
	return NewLimiter(f.c, f.base, rate, burst, local, log)
}

// Shared reports true: every probe of a fleet leases from the same Redis.
// It implements [store.Backend].
func (f *fleet) Shared() bool { return true }

// Name names the server and the base key (and the shard count of a
// cluster's layout) for messages. It implements [store.Backend].
func (f *fleet) Name() string {
	if f.name == "" {
		return "redis key " + f.base
	}
	return f.name
}
