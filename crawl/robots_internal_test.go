package crawl

import (
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/robots"
)

func TestRobotsCache_Bounded(t *testing.T) {
	c := newRobotsCache(3, time.Hour)
	now := time.Unix(1000, 0)
	allowAll := robots.Fixed(true, "test")
	for _, h := range []string{"a", "b", "c", "d"} {
		c.put(h, allowAll, now)
	}
	if n := c.len(); n != 3 {
		t.Errorf("len() = %d, want 3", n)
	}
	if r := c.get("a", now); r != nil {
		t.Errorf("get(a) after eviction = %v, want nil", r)
	}
	if r := c.get("d", now); r != allowAll {
		t.Errorf("get(d) = %v, want allowAll", r)
	}
	if r := c.get("d", now.Add(2*time.Hour)); r != nil {
		t.Errorf("get(d) after TTL = %v, want nil", r)
	}
}

func TestRobotsCache_ReserveKeepsCrawlDelay(t *testing.T) {
	c := newRobotsCache(10, time.Hour)
	t0 := time.Unix(1000, 0)
	if at := c.reserve("h", t0); !at.Equal(t0) {
		t.Fatalf("first reserve = %v, want %v", at, t0)
	}
	c.put("h", &robots.Rules{CrawlDelay: 2 * time.Second}, t0)
	if at := c.reserve("h", t0.Add(time.Second)); !at.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("reserve 1s later = %v, want %v", at, t0.Add(2*time.Second))
	}
	if at := c.reserve("h", t0.Add(time.Second)); !at.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("second reserve = %v, want %v", at, t0.Add(4*time.Second))
	}
	if at := c.reserve("other", t0); !at.Equal(t0) {
		t.Errorf("reserve(other) = %v, want %v", at, t0)
	}
}

// A crawler's robots.txt cache forgets a policy within 24 hours (RFC 9309
// §2.4 says not to use one longer).
func TestRobotsCache_AtMostADay(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	c.robots.put("h", robots.Fixed(false, "test"), t0)
	if c.robots.get("h", t0.Add(time.Hour)) == nil {
		t.Fatal("policy forgotten after an hour")
	}
	if r := c.robots.get("h", t0.Add(24*time.Hour+time.Second)); r != nil {
		t.Fatalf("policy still cached after 24 h: %+v", r)
	}
}
