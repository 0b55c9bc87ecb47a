package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// The seen set's contract is checked by storetest.Run (TestStore_Conformance);
// what follows is only Redis's.

// TestEmitted_KeyLayout checks the documented key: a set per run under the
// base, holding 16-byte members.
func TestEmitted_KeyLayout(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	base := redistest.Prefix(t)
	e := redisstore.NewEmitted(c, base)
	if err := e.Mark(t.Context(), "r1", []string{"a", "b", "a"}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	members, err := c.SMembers(t.Context(), base+":emitted:r1").Result()
	if err != nil {
		t.Fatalf("SMEMBERS: %v", err)
	}
	if len(members) != 2 {
		t.Fatalf("SMEMBERS %s:emitted:r1 has %d members, want 2", base, len(members))
	}
	h := store.KeyHash("a")
	found := false
	for _, m := range members {
		if len(m) != 16 {
			t.Errorf("member %q has %d bytes, want 16", m, len(m))
		}
		found = found || m == string(h[:])
	}
	if !found {
		t.Errorf("SMEMBERS lacks KeyHash(\"a\")")
	}
}
