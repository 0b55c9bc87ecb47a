package crawl

import (
	"container/list"
	"sync"
	"time"

	"github.com/spyder-crawler/spyder/robots"
)

// robotsCache remembers robots.txt per host (and, for Crawl-delay, when a
// request last went to it) for a bounded number of hosts, evicting the least
// recently used. It is safe for concurrent use.
type robotsCache struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	ll    *list.List // of *robotsEntry, most recent first
	hosts map[string]*list.Element
}

type robotsEntry struct {
	host    string
	rules   *robots.Rules // nil until fetched
	fetched time.Time
	last    time.Time // when the last request to host went (or will go) out
}

func newRobotsCache(max int, ttl time.Duration) *robotsCache {
	return &robotsCache{max: max, ttl: ttl, ll: list.New(), hosts: make(map[string]*list.Element)}
}

// get returns the cached policy for host, or nil if there is none or it is
// older than the cache's TTL.
func (c *robotsCache) get(host string, now time.Time) *robots.Rules {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(host)
	if e.rules == nil || now.Sub(e.fetched) > c.ttl {
		return nil
	}
	return e.rules
}

// put stores host's policy.
func (c *robotsCache) put(host string, r *robots.Rules, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(host)
	e.rules, e.fetched = r, now
}

// reserve books the next request slot to host, keeping the host's
// Crawl-delay (once its robots.txt is known) between our requests, and
// returns when that request may go out: now, unless a gap is owed.
func (c *robotsCache) reserve(host string, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(host)
	at := now
	if e.rules != nil && !e.last.IsZero() {
		if next := e.last.Add(e.rules.CrawlDelay); next.After(at) {
			at = next
		}
	}
	e.last = at
	return at
}

// sent records that a request to host actually went out at t, which may be
// later than its reserved slot when the limiter made it wait.
func (c *robotsCache) sent(host string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entryLocked(host); t.After(e.last) {
		e.last = t
	}
}

func (c *robotsCache) entryLocked(host string) *robotsEntry {
	if el, ok := c.hosts[host]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*robotsEntry)
	}
	for c.ll.Len() >= c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.hosts, old.Value.(*robotsEntry).host)
	}
	e := &robotsEntry{host: host}
	c.hosts[host] = c.ll.PushFront(e)
	return e
}

// len returns how many hosts the cache holds.
func (c *robotsCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
