package crawl

import (
	"bufio"
	"container/list"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// robotsToken is the product token robots.txt groups are matched against.
const robotsToken = "spyder"

// Bounds on what one robots.txt may cost: RFC 9309 asks crawlers to parse at
// least 500 KiB; only the rules of the group that applies to us are kept, and
// at most maxRobotsRules of them.
const (
	robotsCap      = 512 << 10
	maxRobotsRules = 1000
)

// robots is the part of one host's robots.txt that applies to spyder.
type robots struct {
	rules      []robotsRule
	crawlDelay time.Duration
	denyAll    bool // 5xx or unreachable: RFC 9309 says assume complete disallow
}

type robotsRule struct {
	allow   bool
	pattern string
}

// allowAll is the policy for a host without robots.txt (4xx).
var allowAll = &robots{}

// denyAll is the policy for a host whose robots.txt failed (5xx, unreachable).
var denyAll = &robots{denyAll: true}

// parseRobots reads a robots.txt and keeps the rules of the groups for
// user agent token "spyder" if any, else those for "*" (RFC 9309: groups
// matching the same agent are merged).
func parseRobots(r io.Reader) *robots {
	var (
		mine, star     robots
		haveMine       bool
		inAgents       bool // the previous significant line was user-agent
		forMe, forStar bool
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), robotsCap)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		switch k {
		case "user-agent":
			if !inAgents {
				forMe, forStar = false, false
			}
			inAgents = true
			agent := strings.ToLower(v)
			if i := strings.IndexAny(agent, "/ "); i >= 0 {
				agent = agent[:i]
			}
			switch agent {
			case robotsToken:
				forMe, haveMine = true, true
			case "*":
				forStar = true
			}
		case "allow", "disallow", "crawl-delay":
			inAgents = false
			for _, g := range []*robots{&mine, &star} {
				if g == &mine && !forMe || g == &star && !forStar {
					continue
				}
				if k == "crawl-delay" {
					if d, err := strconv.ParseFloat(v, 64); err == nil && d > 0 && d < 1e6 {
						g.crawlDelay = time.Duration(d * float64(time.Second))
					}
					continue
				}
				if v == "" || len(g.rules) >= maxRobotsRules {
					continue // an empty Disallow allows everything
				}
				g.rules = append(g.rules, robotsRule{allow: k == "allow", pattern: v})
			}
		default:
			// Sitemap and unknown lines do not end a group of user agents
			// (RFC 9309 §2.2.4).
		}
	}
	if haveMine {
		return &mine
	}
	return &star
}

// allowed reports whether path (with its query) may be fetched: the longest
// matching rule wins, Allow winning a tie (RFC 9309 §2.2.2).
func (r *robots) allowed(path string) bool {
	if r.denyAll {
		return false
	}
	best, allow := -1, true
	for _, rule := range r.rules {
		if !robotsMatch(rule.pattern, path) {
			continue
		}
		if n := len(rule.pattern); n > best || n == best && rule.allow {
			best, allow = n, rule.allow
		}
	}
	return allow
}

// robotsMatch reports whether a robots.txt path pattern, with its `*`
// wildcard and `$` end anchor, matches path.
func robotsMatch(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	rest := path[len(parts[0]):]
	for i, p := range parts[1:] {
		last := i == len(parts)-2
		if last && anchored {
			return strings.HasSuffix(rest, p)
		}
		j := strings.Index(rest, p)
		if j < 0 {
			return false
		}
		rest = rest[j+len(p):]
	}
	return !anchored || rest == ""
}

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
	rules   *robots // nil until fetched
	fetched time.Time
	last    time.Time // when the last request to host went (or will go) out
}

func newRobotsCache(max int, ttl time.Duration) *robotsCache {
	return &robotsCache{max: max, ttl: ttl, ll: list.New(), hosts: make(map[string]*list.Element)}
}

// get returns the cached policy for host, or nil if there is none or it is
// older than the cache's TTL.
func (c *robotsCache) get(host string, now time.Time) *robots {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entryLocked(host)
	if e.rules == nil || now.Sub(e.fetched) > c.ttl {
		return nil
	}
	return e.rules
}

// put stores host's policy.
func (c *robotsCache) put(host string, r *robots, now time.Time) {
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
		if next := e.last.Add(e.rules.crawlDelay); next.After(at) {
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
