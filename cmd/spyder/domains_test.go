package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestApp_SeedLongBadLineReason: a line over 80 bytes that is not a host is
// logged with the reason alone, not the reason behind a copy of the input
// (the input is logged, clipped, in its own field).
func TestApp_SeedLongBadLineReason(t *testing.T) {
	t.Parallel()
	long := "a!." + strings.Repeat("a", 100) + ".com"
	path := mustFile(t, "long.txt", []byte("good.example.com\n"+long+"\n"))
	db := t.TempDir() + "/spyder.db"
	_, stderr, err := tryApp(t.Context(), "queue", "seed", "--db", db, path)
	if err != nil {
		t.Fatalf("queue seed: %v\n%s", err, stderr)
	}
	lines := logLines(stderr, "domain_rejected")
	if len(lines) != 1 {
		t.Fatalf("%d domain_rejected lines, want 1:\n%s", len(lines), stderr)
	}
	if got, want := lines[0]["reason"], "bad character '!'"; got != want {
		t.Errorf("reason = %q, want %q", got, want)
	}
	if got, want := lines[0]["input"], long[:80]+"…"; got != want {
		t.Errorf("input = %q, want the line clipped to 80 bytes, %q", got, want)
	}
}

// TestApp_SeedFileGrowsRedisTableAhead: `queue seed` of a file makes room
// in the Redis host table for the new hosts the whole file is expected to
// hold, from its host lines and the share of new ones in a first sample of
// 1,000: a file of 1,000 new hosts and then 19,000 repeats of them (which
// the sample cannot tell) leaves the table sized for 20,000, 500 buckets,
// where seeding without making room ahead grows it to 25. Seeding the file
// again grows nothing.
func TestApp_SeedFileGrowsRedisTableAhead(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("# a list\n\n")
	for i := range 20_000 {
		fmt.Fprintf(&b, "s%04d.example\n", i%1000)
	}
	path := mustFile(t, "list.txt", []byte(b.String()))
	key := redistest.Prefix(t)
	args := []string{"queue", "seed", "--redis", redistest.Addr(t), "--queue-key", key, path}
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	buckets := func() int {
		m, err := c.HMGet(t.Context(), key+":hosts#meta", "l", "p").Result()
		if err != nil {
			t.Fatal(err)
		}
		l, _ := strconv.Atoi(fmt.Sprint(m[0]))
		p, _ := strconv.Atoi(fmt.Sprint(m[1]))
		return 1<<l + p
	}
	if out := runApp(t, args...); !strings.Contains(out, "added 1000, duplicate 19000") {
		t.Fatalf("queue seed: %q, want 1000 added, 19000 duplicate", out)
	}
	if got := buckets(); got != 500 {
		t.Errorf("host table of %d buckets, want 500 (room for 20,000 hosts)", got)
	}
	if out := runApp(t, args...); !strings.Contains(out, "added 0, duplicate 20000") {
		t.Fatalf("queue seed again: %q", out)
	}
	if got := buckets(); got != 500 {
		t.Errorf("seeding again left %d buckets, want 500", got)
	}
}
