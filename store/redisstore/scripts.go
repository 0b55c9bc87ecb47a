package redisstore

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// preludeLua defines the helpers the lease scripts share (the clock their
// deadlines come from, the check of a counter before the first write); it
// is put before each of those scripts.
//
//go:embed prelude.lua
var preludeLua string

// bucketsLua defines the bucketed tables (the host records, the runs'
// emitted sets) for the scripts that read or write them; it is put before
// each of those scripts.
//
//go:embed buckets.lua
var bucketsLua string

// allScripts are loaded by Open, so the first call of each is an EVALSHA
// and a server without scripting fails at once.
var allScripts = []*redis.Script{
	seedScript, growScript, leaseAckScript, leaseAckBareScript, extendScript, finishScript, releaseScript,
	reclaimScript, statsScript, retryDeadScript, purgeDeadScript, snapshotScript, loadScript,
	heartbeatScript, probeListScript, queuedScript, requeueScript, hostPutScript,
	emitClaimScript, emitMarkScript,
}
