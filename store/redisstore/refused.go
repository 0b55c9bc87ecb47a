package redisstore

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store"
)

// RefusesWrites reports whether err is Redis refusing writes until its
// operator acts: over maxmemory under noeviction (OOM), unable to persist
// (MISCONF), a read-only replica (READONLY), or short of replicas
// (NOREPLICAS). Every write of every caller fails alike then, so a caller
// that retried per item, or failed items for it, would only burn their
// attempts: it should stop and say so.
func RefusesWrites(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, code := range []string{"OOM ", "MISCONF ", "READONLY ", "NOREPLICAS "} {
		if strings.HasPrefix(msg, code) {
			return true
		}
	}
	return false
}

// refusal marks err as [store.ErrWritesRefused] when Redis refuses writes
// (see [RefusesWrites]), so that callers match it without knowing Redis.
func refusal(err error) error {
	if RefusesWrites(err) {
		return store.WritesRefused(err)
	}
	return err
}
