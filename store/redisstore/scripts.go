package redisstore

import "github.com/redis/go-redis/v9"

// allScripts are loaded by Open, so the first call of each is an EVALSHA
// and a server without scripting fails at once.
var allScripts = []*redis.Script{
	seedScript, leaseAckScript, extendScript, finishScript, releaseScript,
	reclaimScript, statsScript, retryDeadScript, purgeDeadScript, snapshotScript, loadScript,
}
