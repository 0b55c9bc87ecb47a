package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store"
)

var (
	//go:embed probes.lua
	probesLua string
	//go:embed probelist.lua
	probeListLua string

	heartbeatScript = redis.NewScript(preludeLua + probesLua)
	probeListScript = redis.NewScript(preludeLua + probeListLua)
)

// Heartbeat records b under "{base}:probes" (a hash of beats) and
// "{base}:probes-expiry" (a sorted set of their expiry on the server's
// clock), and forgets the probes whose beat expired. Both keys expire one
// TTL after the last beat. It implements [store.Probes].
func (s *Store) Heartbeat(ctx context.Context, b store.ProbeBeat, ttl time.Duration) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	_, err = s.run(ctx, "heartbeat", heartbeatScript, []string{s.k.probes, s.k.probeExpiry},
		b.ID, data, ttlMillis(ttl), s.nowArg())
	return err
}

// Probes returns the beats of the probes alive, sorted by ID; a beat that
// is not one spyder wrote is passed over. It implements [store.Probes].
func (s *Store) Probes(ctx context.Context) ([]store.ProbeBeat, error) {
	v, err := s.run(ctx, "probes", probeListScript, []string{s.k.probes, s.k.probeExpiry}, s.nowArg())
	if err != nil {
		return nil, err
	}
	vals, _ := v.([]any)
	beats := make([]store.ProbeBeat, 0, len(vals))
	for _, x := range vals {
		str, ok := x.(string)
		var b store.ProbeBeat
		if !ok || json.Unmarshal([]byte(str), &b) != nil || b.ID == "" {
			continue
		}
		beats = append(beats, b)
	}
	slices.SortFunc(beats, func(a, b store.ProbeBeat) int { return strings.Compare(a.ID, b.ID) })
	return beats, nil
}
