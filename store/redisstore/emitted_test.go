package redisstore_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/redisstore"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// The seen set's contract is checked by storetest.Run (TestStore_Conformance);
// what follows is only Redis's.

// TestEmitted_KeyLayout checks the documented keys: a run's table under
// the base, whose buckets are intsets of the keys' 8-byte prints, split as
// it grows, and dropped whole by DropRun (with an older spyder's set of the
// run) while other runs stay.
func TestEmitted_KeyLayout(t *testing.T) {
	ctx := t.Context()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	base := redistest.Prefix(t)
	e := redisstore.NewEmitted(c, base)
	if err := e.Mark(ctx, "r1", []string{"a", "b", "a"}); err != nil {
		t.Fatalf("Mark: %v", err)
	}
	members, err := c.SMembers(ctx, base+":emitted:r1#0").Result()
	if err != nil {
		t.Fatalf("SMEMBERS: %v", err)
	}
	want := strconv.FormatInt(int64(store.KeyPrint("a")), 10)
	if len(members) != 2 || members[0] != want && members[1] != want {
		t.Fatalf("SMEMBERS %s:emitted:r1#0 = %v, want 2 members, one %s (KeyPrint(\"a\"))", base, members, want)
	}
	keys := make([]string, 20_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key %d", i)
	}
	for _, run := range []string{"r1", "r2"} {
		if err := e.Mark(ctx, run, keys); err != nil {
			t.Fatalf("Mark: %v", err)
		}
	}
	meta := c.HGetAll(ctx, base+":emitted:r1#meta").Val()
	if meta["n"] != "20002" {
		t.Errorf("meta of r1 = %v, want n 20002", meta)
	}
	l, _ := strconv.Atoi(meta["l"])
	p, _ := strconv.Atoi(meta["p"])
	nb := 1<<l + p
	if nb < 20_002/320 || nb > 20_002/160+1 {
		t.Errorf("%d buckets for 20,002 keys, want about %d", nb, 20_002/160)
	}
	for i := range nb {
		if enc := c.ObjectEncoding(ctx, fmt.Sprintf("%s:emitted:r1#%d", base, i)).Val(); enc != "intset" {
			t.Errorf("bucket %d is a %s, want an intset", i, enc)
		}
	}
	seen, err := e.Seen(ctx, "r1", append(keys, "a", "never"))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seen {
		if s != (i < len(keys)+1) {
			t.Fatalf("Seen[%d] = %v after Mark", i, s)
		}
	}

	c.SAdd(ctx, base+":emitted:r1", "an older spyder's member")
	n, err := e.DropRun(ctx, "r1")
	if err != nil || n != 20_003 {
		t.Errorf("DropRun = %d, %v; want 20003", n, err)
	}
	if left := c.Keys(ctx, base+":emitted:r1*").Val(); len(left) != 0 {
		t.Errorf("keys of r1 after DropRun: %v", left)
	}
	if seen, err := e.Seen(ctx, "r2", keys[:1]); err != nil || !seen[0] {
		t.Errorf("Seen(r2) after dropping r1 = %v, %v; want r2 kept", seen, err)
	}
	if seen, err := e.Seen(ctx, "r1", keys[:1]); err != nil || seen[0] {
		t.Errorf("Seen(r1) after DropRun = %v, %v; want nothing emitted", seen, err)
	}
}
