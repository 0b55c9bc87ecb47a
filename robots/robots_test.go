package robots

import (
	"strings"
	"testing"
	"time"
)

// cases are in the spirit of Google's robots.txt conformance suite: a file,
// a user agent, a URL, and whether the URL may be fetched.
var cases = []struct {
	name, file, ua, url string
	want                bool
}{
	// Matching: longest match wins, Allow wins a tie.
	{"no file allows", "", "spyder", "http://e.com/x", true},
	{"disallow all", "user-agent: *\ndisallow: /\n", "spyder", "http://e.com/x", false},
	{"longest match wins (allow)", "user-agent: *\ndisallow: /a\nallow: /a/b\n", "spyder", "http://e.com/a/b/c", true},
	{"longest match wins (disallow)", "user-agent: *\nallow: /a\ndisallow: /a/b\n", "spyder", "http://e.com/a/b/c", false},
	{"allow wins a tie", "user-agent: *\ndisallow: /a\nallow: /a\n", "spyder", "http://e.com/a", true},
	{"allow wins a tie whatever the order", "user-agent: *\nallow: /a\ndisallow: /a\n", "spyder", "http://e.com/a", true},
	{"rule is a prefix", "user-agent: *\ndisallow: /fish\n", "spyder", "http://e.com/fish.html", false},
	{"prefix is case-sensitive", "user-agent: *\ndisallow: /fish\n", "spyder", "http://e.com/Fish", true},
	{"empty disallow allows", "user-agent: *\ndisallow:\n", "spyder", "http://e.com/", true},
	{"query is matched", "user-agent: *\ndisallow: /*?id=\n", "spyder", "http://e.com/p?id=3", false},
	{"fragment is not", "user-agent: *\ndisallow: /p$\n", "spyder", "http://e.com/p#frag", false},
	{"no path is /", "user-agent: *\ndisallow: /$\n", "spyder", "http://e.com", false},
	{"robots.txt decided like any path", "user-agent: *\ndisallow: /\n", "spyder", "http://e.com/robots.txt", false},
	// Wildcards.
	{"star in the middle", "user-agent: *\ndisallow: /*.php\n", "spyder", "http://e.com/x/y.php?q", false},
	{"star does not need a match", "user-agent: *\ndisallow: /a*\n", "spyder", "http://e.com/a", false},
	{"dollar anchors", "user-agent: *\ndisallow: /*.php$\n", "spyder", "http://e.com/x.php?q", true},
	{"dollar anchors, exact", "user-agent: *\ndisallow: /*.php$\n", "spyder", "http://e.com/x.php", false},
	{"dollar on root", "user-agent: *\ndisallow: /$\n", "spyder", "http://e.com/x", true},
	{"several stars", "user-agent: *\ndisallow: /a*b*c$\n", "spyder", "http://e.com/aXbYbZc", false},
	{"several stars, no match", "user-agent: *\ndisallow: /a*b*c$\n", "spyder", "http://e.com/aXcYb", true},
	{"literal star in path is not a wildcard", "user-agent: *\ndisallow: /a%2Ab\n", "spyder", "http://e.com/aXb", true},
	{"escaped star matches a star", "user-agent: *\ndisallow: /a%2Ab\n", "spyder", "http://e.com/a*b", false},
	{"dollar inside a pattern is literal", "user-agent: *\ndisallow: /a$b\n", "spyder", "http://e.com/a$b", false},
	{"longer wildcard rule wins", "user-agent: *\nallow: /page\ndisallow: /*.htm\n", "spyder", "http://e.com/page.htm", false},
	{"index.html allows its directory", "user-agent: *\ndisallow: /\nallow: /d/index.html\n", "spyder", "http://e.com/d/", true},
	{"index.html allows only the directory", "user-agent: *\ndisallow: /\nallow: /d/index.html\n", "spyder", "http://e.com/d/x", false},
	// Percent-encoding: encoded and literal are the same, non-ASCII included.
	{"literal pattern, encoded URL", "user-agent: *\ndisallow: /foo/ツ\n", "spyder", "http://e.com/foo/%E3%83%84", false},
	{"literal pattern, literal URL is not encoded", "user-agent: *\ndisallow: /foo/ツ\n", "spyder", "http://e.com/foo/ツ", true},
	{"encoded pattern, encoded URL", "user-agent: *\ndisallow: /foo/%E3%83%84\n", "spyder", "http://e.com/foo/%E3%83%84", false},
	{"lower-case escapes in the URL", "user-agent: *\ndisallow: /foo/%E3%83%84\n", "spyder", "http://e.com/foo/%e3%83%84", false},
	{"lower-case escapes", "user-agent: *\ndisallow: /foo/%e3%83%84\n", "spyder", "http://e.com/foo/%E3%83%84", false},
	{"encoded unreserved letter is not decoded", "user-agent: *\ndisallow: /%61bc\n", "spyder", "http://e.com/abc", true},
	{"encoded unreserved letter matches itself", "user-agent: *\ndisallow: /%61bc\n", "spyder", "http://e.com/%61bc", false},
	{"query with reserved characters", "user-agent: *\ndisallow: /\nallow: /a?b=c&d=http://e?f\n", "spyder", "http://e.com/a?b=c&d=http://e?f", true},
	{"encoded slash is not a slash", "user-agent: *\ndisallow: /a%2Fb\n", "spyder", "http://e.com/a/b", true},
	// User agents: product tokens.
	{"other bot's group", "user-agent: otherbot\ndisallow: /\n", "spyder", "http://e.com/", true},
	{"own group over star", "user-agent: *\ndisallow: /\n\nuser-agent: spyder\nallow: /\n", "spyder", "http://e.com/", true},
	{"own group even if empty", "user-agent: spyder\n\nuser-agent: *\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"empty own group ignores star", "user-agent: spyder\ndisallow:\n\nuser-agent: *\ndisallow: /\n", "spyder", "http://e.com/", true},
	{"agent is case-insensitive", "user-agent: SPYDER\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"agent with version", "user-agent: spyder/2.0\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"agent with wildcard suffix", "user-agent: spyder*\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"longer token is another agent", "user-agent: spyderbot\ndisallow: /\n", "spyder", "http://e.com/", true},
	{"agent with space is its first word", "user-agent: spyder bot\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"crawler agent is compared whole", "user-agent: *\ndisallow: /\nuser-agent: foo bar\nallow: /\n", "foo bar", "http://e.com/", false},
	{"crawler agent is compared case-insensitively", "user-agent: FOO bar\ndisallow: /x\n", "foo", "http://e.com/x", false},
	{"star with a comment", "user-agent: * # everyone\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"star followed by text is not star", "user-agent: *bot\ndisallow: /\n", "spyder", "http://e.com/", true},
	{"shared group", "user-agent: a\nuser-agent: spyder\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"groups merge", "user-agent: spyder\ndisallow: /a\n\nuser-agent: b\ndisallow: /\n\nuser-agent: spyder\ndisallow: /c\n", "spyder", "http://e.com/c", false},
	{"rule ends the agent list", "user-agent: spyder\ndisallow: /a\nuser-agent: b\ndisallow: /\n", "spyder", "http://e.com/", true},
	{"sitemap does not end the agent list", "user-agent: a\nsitemap: /s.xml\nuser-agent: spyder\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"rules before any agent are ignored", "disallow: /\nuser-agent: *\nallow: /x\n", "spyder", "http://e.com/", true},
	// Parsing.
	{"byte order mark", "\xEF\xBB\xBFuser-agent: spyder\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"partial byte order mark makes its line junk", "\xEF\xBBuser-agent: spyder\ndisallow: /\n", "spyder", "http://e.com/", true},
	{"byte order mark only at the start", "user-agent: spyder\n\xEF\xBB\xBFdisallow: /\n", "spyder", "http://e.com/", true},
	{"CR line endings", "user-agent: spyder\rdisallow: /a\rallow: /a/b\r", "spyder", "http://e.com/a/x", false},
	{"CR line endings, allowed", "user-agent: spyder\rdisallow: /a\rallow: /a/b\r", "spyder", "http://e.com/a/b", true},
	{"CRLF line endings", "user-agent: spyder\r\ndisallow: /\r\n", "spyder", "http://e.com/", false},
	{"mixed line endings", "user-agent: x\r\ndisallow: /\ruser-agent: spyder\ndisallow: /a\r\n", "spyder", "http://e.com/b", true},
	{"mixed line endings, blocked", "user-agent: x\r\ndisallow: /\ruser-agent: spyder\ndisallow: /a\r\n", "spyder", "http://e.com/a", false},
	{"missing colon", "user-agent spyder\ndisallow /\n", "spyder", "http://e.com/", false},
	{"missing colon, three words ignored", "user-agent: spyder\ndisallow / junk\n", "spyder", "http://e.com/", true},
	{"key case", "USER-AGENT: spyder\nDisAllow: /\n", "spyder", "http://e.com/", false},
	{"typo useragent", "useragent: spyder\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"typo user agent", "user agent: spyder\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"typo dissallow", "user-agent: spyder\ndissallow: /\n", "spyder", "http://e.com/", false},
	{"typo disalow", "user-agent: spyder\ndisalow: /\n", "spyder", "http://e.com/", false},
	{"white space around", "  user-agent  :  spyder  \n\tdisallow\t:\t/a  \n", "spyder", "http://e.com/a", false},
	{"html junk lines", "<html><body>\nuser-agent: spyder<br />\n<br />\ndisallow: /a<br />\n</body>\n", "spyder", "http://e.com/b", true},
	{"junk lines do not end a group", "user-agent: spyder\n<br />\n}{junk\ndisallow: /\n", "spyder", "http://e.com/", false},
	{"comment-only lines", "# hi\nuser-agent: spyder # me\n# rules\ndisallow: / # all\n", "spyder", "http://e.com/", false},
}

func TestDecide(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Parse([]byte(c.file), c.ua).Decide(PathOf(c.url))
			if got.Allowed != c.want {
				t.Errorf("%q for %s: allowed = %v (%+v), want %v", c.file, c.url, got.Allowed, got, c.want)
			}
		})
	}
}

// A rule at the end of a file over 500 KiB is read (RFC 9309 §2.5).
func TestLongFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("user-agent: spyder\n")
	for b.Len() < 510<<10 {
		b.WriteString("allow: /some/long/path/that/fills/the/file\n")
	}
	b.WriteString("disallow: /last\n")
	if Parse([]byte(b.String()), "spyder").Allowed("/last") {
		t.Fatal("the rule at the end of a 510 KiB file was not read")
	}
}

func TestDecisionNamesRuleAndGroup(t *testing.T) {
	r := Parse([]byte("user-agent: *\ndisallow: /\n\nUser-agent: spyder\nAllow: /a\nDisallow: /a/b\n"), "spyder")
	d := r.Decide("/a/b/c")
	if d.Allowed || d.Rule == nil || d.Rule.String() != "Disallow: /a/b" || d.Rule.Line != 6 ||
		d.Rule.Group != (Group{Line: 4, Text: "User-agent: spyder"}) {
		t.Fatalf("decision = %+v", d)
	}
	if d := r.Decide("/z"); !d.Allowed || d.Rule != nil || d.Reason != `no rule matches in group "User-agent: spyder" (line 4)` {
		t.Fatalf("decision for /z = %+v", d)
	}
	if d := Parse([]byte("user-agent: other\ndisallow: /\n"), "spyder").Decide("/"); d.Reason != `no group for "spyder" or "*"` {
		t.Fatalf("decision without a group = %+v", d)
	}
}

func TestCrawlDelay(t *testing.T) {
	for _, c := range []struct {
		file string
		want time.Duration
	}{
		{"user-agent: *\ncrawl-delay: 2\n", 2 * time.Second},
		{"user-agent: spyder\ncrawl-delay: 0.5\n\nuser-agent: *\ncrawl-delay: 9\n", 500 * time.Millisecond},
		{"user-agent: other\ncrawl-delay: 9\n", 0},
		{"user-agent: *\ncrawl-delay: -1\n", 0},
	} {
		if got := Parse([]byte(c.file), "spyder").CrawlDelay; got != c.want {
			t.Errorf("%q: crawl delay %v, want %v", c.file, got, c.want)
		}
	}
}

func TestFixed(t *testing.T) {
	if d := Fixed(false, "robots.txt answered 503").Decide("/robots.txt"); d.Allowed || d.Reason != "robots.txt answered 503" {
		t.Fatalf("Fixed(false) = %+v", d)
	}
	if !Fixed(true, "404").Allowed("/x") {
		t.Fatal("Fixed(true) disallows")
	}
}

func TestPathOf(t *testing.T) {
	for in, want := range map[string]string{
		"http://e.com":           "/",
		"https://e.com:8080/a?b": "/a?b",
		"http://e.com?q=1":       "/?q=1",
		"http://e.com/a#b":       "/a",
		"/a/b;p?q":               "/a/b;p?q",
		"a/b":                    "/a/b",
	} {
		if got := PathOf(in); got != want {
			t.Errorf("PathOf(%q) = %q, want %q", in, got, want)
		}
	}
}
