// Package robots reads robots.txt files as RFC 9309 describes them and as
// Google's open-source parser reads them, and decides whether a crawler may
// fetch a path.
//
// Parsing is forgiving in the ways Google's parser is: a UTF-8 byte order
// mark is skipped; lines may end in LF, CR LF or a lone CR; a key may be
// misspelt in the common ways ("useragent", "dissallow", ...) and a missing
// colon is accepted when the line is exactly a key and a value separated by
// white space; every other line is ignored. Only the groups that apply to
// one product token are kept.
package robots

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// MaxSize is how much of a robots.txt spyder reads: RFC 9309 §2.5 asks
// crawlers to parse at least 500 KiB. Callers cut longer files there.
const MaxSize = 512 << 10

// Group names the user-agent line through which a group applies.
type Group struct {
	Line int    // 1-based line number of the user-agent line
	Text string // that line, trimmed, e.g. "User-agent: spyder"
}

// Rule is one Allow or Disallow line of a group that applies.
type Rule struct {
	Allow   bool
	Pattern string // as written, e.g. "/private/*"
	Line    int    // 1-based line number
	Group   Group  // the group the rule belongs to
	canon   string // Pattern in the form paths are compared in
}

// String renders r as its line reads, e.g. `Disallow: /a`.
func (r Rule) String() string {
	if r.Allow {
		return "Allow: " + r.Pattern
	}
	return "Disallow: " + r.Pattern
}

// Rules is the part of one robots.txt that applies to one product token:
// the rules of every group naming the token if there is one, else those of
// every "*" group (groups for the same agent are merged).
type Rules struct {
	Agent      string        // the user agent the rules were chosen for
	Groups     []Group       // the groups that apply, in file order; none: no group applies
	Specific   bool          // Groups name Agent rather than "*"
	CrawlDelay time.Duration // of the groups that apply; 0 when none is given
	rules      []Rule
	fixed      *Decision // set by Fixed: the answer for every path
}

// Fixed returns rules that give every path the same answer, for a
// robots.txt that could not be read (RFC 9309: an unreachable file means
// disallow all, a missing one allow all); reason says why.
func Fixed(allow bool, reason string) *Rules {
	return &Rules{fixed: &Decision{Allowed: allow, Reason: reason}}
}

// ProductToken returns the product token of a user agent: its leading run
// of letters, '-' and '_' ("spyder/1.0 (+https://…)" → "spyder"). robots.txt
// groups are matched against it, case-insensitively.
func ProductToken(ua string) string {
	for i := 0; i < len(ua); i++ {
		if !isTokenByte(ua[i]) {
			return ua[:i]
		}
	}
	return ua
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
}

// side collects the rules of the groups of one kind (naming the agent, or
// "*") while parsing.
type side struct {
	seen   bool
	groups []Group
	rules  []Rule
	delay  time.Duration
	cur    Group // the group being read, when it applies
	in     bool  // the group being read applies
}

// Parse reads a robots.txt and returns the rules that apply to agent: the
// groups whose user-agent line's product token (see [ProductToken]) equals
// agent, case-insensitively, else the "*" groups. agent is compared whole,
// as Google's parser compares it, so a crawler passes its product token
// ("spyder", not "spyder/1.0"). Parse never fails: lines it cannot read
// are skipped.
func Parse(data []byte, agent string) *Rules {
	token := agent
	var mine, star side
	closed := true // a rule was read since the last user-agent line
	for n, line := range lines(data) {
		key, val, ok := keyValue(line)
		if !ok {
			continue
		}
		switch kind(key) {
		case keyAgent:
			if closed {
				mine.in, star.in, closed = false, false, false
			}
			g := Group{Line: n + 1, Text: strings.TrimSpace(stripComment(line))}
			if isGlobal(val) {
				star.join(g)
			} else if t := ProductToken(val); t != "" && strings.EqualFold(t, token) {
				mine.join(g)
			}
		case keyAllow, keyDisallow:
			closed = true
			mine.add(kind(key) == keyAllow, val, n+1)
			star.add(kind(key) == keyAllow, val, n+1)
		case keyDelay:
			// Crawl-delay belongs to its group as a rule does, so it too
			// ends the list of user agents.
			closed = true
			if d, err := strconv.ParseFloat(val, 64); err == nil && d > 0 && d < 1e6 {
				mine.setDelay(time.Duration(d * float64(time.Second)))
				star.setDelay(time.Duration(d * float64(time.Second)))
			}
		}
	}
	use := &star
	if mine.seen {
		use = &mine
	}
	return &Rules{Agent: token, Groups: use.groups, Specific: mine.seen, CrawlDelay: use.delay, rules: use.rules}
}

// join records that the group being read applies through user-agent line g.
func (s *side) join(g Group) {
	if !s.in {
		s.in, s.cur, s.seen = true, g, true
		s.groups = append(s.groups, g)
	}
}

// add keeps a rule of the group being read if it applies. An empty pattern
// matches nothing. An Allow of ".../index.htm[l]" also allows its directory
// ("/d/index.html" allows "/d/"), as Google's parser does.
func (s *side) add(allow bool, pattern string, line int) {
	if !s.in || pattern == "" {
		return
	}
	s.rules = append(s.rules, Rule{Allow: allow, Pattern: pattern, Line: line, Group: s.cur, canon: canonPattern(pattern)})
	if i := strings.LastIndexByte(pattern, '/'); allow && i >= 0 && strings.HasPrefix(pattern[i:], "/index.htm") {
		dir := pattern[:i+1] + "$"
		s.rules = append(s.rules, Rule{Allow: true, Pattern: pattern, Line: line, Group: s.cur, canon: canonPattern(dir)})
	}
}

func (s *side) setDelay(d time.Duration) {
	if s.in {
		s.delay = d
	}
}

// isGlobal reports whether a user-agent value is "*" (possibly followed by
// white space and more text, which is ignored).
func isGlobal(v string) bool {
	return strings.HasPrefix(v, "*") && (len(v) == 1 || v[1] == ' ' || v[1] == '\t')
}

// lines splits data into lines at LF, CR LF or a lone CR, after skipping a
// UTF-8 byte order mark. Only a whole mark at the start is skipped: a
// partial one, as elsewhere, makes its line junk, as Google's
// conformance cases expect.
func lines(data []byte) []string {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	var out []string
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			out = append(out, string(data))
			break
		}
		out = append(out, string(data[:i]))
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return out
}

func stripComment(line string) string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		return line[:i]
	}
	return line
}

// keyValue splits a line into its key and value, without comment and
// surrounding white space. A line without a colon is accepted when it is
// exactly two words (Google's parser allows a forgotten colon).
func keyValue(line string) (key, val string, ok bool) {
	line = strings.Trim(stripComment(line), " \t")
	if k, v, found := strings.Cut(line, ":"); found {
		key, val = strings.Trim(k, " \t"), strings.Trim(v, " \t")
		return key, val, key != ""
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// Keys the parser acts on.
const (
	keyOther = iota
	keyAgent
	keyAllow
	keyDisallow
	keyDelay
)

// keyPrefixes maps the spellings a key may start with, the common typos
// Google's parser accepts included, to the key.
var keyPrefixes = []struct {
	prefix string
	key    int
}{
	{"user-agent", keyAgent}, {"useragent", keyAgent}, {"user agent", keyAgent},
	{"allow", keyAllow},
	{"disallow", keyDisallow}, {"dissallow", keyDisallow}, {"dissalow", keyDisallow},
	{"disalow", keyDisallow}, {"diasllow", keyDisallow}, {"disallaw", keyDisallow},
	{"crawl-delay", keyDelay},
}

func kind(key string) int {
	key = strings.ToLower(key)
	for _, k := range keyPrefixes {
		if strings.HasPrefix(key, k.prefix) {
			return k.key
		}
	}
	return keyOther
}
