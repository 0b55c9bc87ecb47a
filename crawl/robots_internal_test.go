package crawl

import (
	"strings"
	"testing"
	"time"
)

func TestParseRobots(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		path  string
		want  bool
		delay time.Duration
	}{
		{"empty file allows", "", "/", true, 0},
		{"empty disallow allows", "User-agent: *\nDisallow:\n", "/", true, 0},
		{"star blocks all", "User-agent: *\nDisallow: /\n", "/", false, 0},
		{"other bot blocked only", "User-agent: otherbot\nDisallow: /\n", "/", true, 0},
		{"spyder group wins over star", "User-agent: *\nDisallow: /\n\nUser-agent: spyder\nAllow: /\n", "/", true, 0},
		{"spyder blocked, star allowed", "User-agent: spyder\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "/", false, 0},
		{"agent match is case-insensitive", "User-agent: SPYDER\nDisallow: /\n", "/", false, 0},
		{"agent with version", "User-agent: Spyder/2.0\nDisallow: /\n", "/", false, 0},
		{"shared group of agents", "User-agent: googlebot\nUser-agent: spyder\nDisallow: /\n\nUser-agent: *\nDisallow:\n", "/", false, 0},
		{"agent prefix is not a match", "User-agent: spyderbot\nDisallow: /\n", "/", true, 0},
		{"CRLF and comments", "# robots\r\nUser-agent: * # all\r\nAllow: /\r\nDisallow: /admin\r\n", "/admin/x", false, 0},
		{"longest match wins", "User-agent: *\nDisallow: /a\nAllow: /a/b\n", "/a/b/c", true, 0},
		{"allow wins a tie", "User-agent: *\nDisallow: /a\nAllow: /a\n", "/a", true, 0},
		{"prefix only", "User-agent: *\nDisallow: /index.html\n", "/", true, 0},
		{"wildcard", "User-agent: *\nDisallow: /*.php\n", "/x/y.php?q", false, 0},
		{"end anchor", "User-agent: *\nDisallow: /*.php$\n", "/x.php?q", true, 0},
		{"end anchor exact", "User-agent: *\nDisallow: /$\n", "/", false, 0},
		{"end anchor not root", "User-agent: *\nDisallow: /$\n", "/x", true, 0},
		{"crawl-delay of our group", "User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n", "/", true, time.Second},
		{"crawl-delay fraction", "User-agent: spyder\nCrawl-delay: 0.5\n\nUser-agent: *\nDisallow: /\n", "/", true, 500 * time.Millisecond},
		{"groups for spyder merge", "User-agent: spyder\nDisallow: /a\n\nUser-agent: spyder\nDisallow: /\n", "/", false, 0},
		{"sitemap does not end agents", "User-agent: a\nSitemap: /s.xml\nUser-agent: spyder\nDisallow: /\n", "/", false, 0},
		{"rules before any agent ignored", "Disallow: /\nUser-agent: *\nAllow: /\n", "/", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parseRobots(strings.NewReader(tt.body))
			if got := r.allowed(tt.path); got != tt.want {
				t.Errorf("allowed(%q) = %v, want %v", tt.path, got, tt.want)
			}
			if r.crawlDelay != tt.delay {
				t.Errorf("crawlDelay = %v, want %v", r.crawlDelay, tt.delay)
			}
		})
	}
}

func TestRobotsCache_Bounded(t *testing.T) {
	c := newRobotsCache(3, time.Hour)
	now := time.Unix(1000, 0)
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
	c.put("h", &robots{crawlDelay: 2 * time.Second}, t0)
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
