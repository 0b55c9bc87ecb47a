package robots

import (
	"fmt"
	"strings"
)

// Decision is the answer for one path and what gave it.
type Decision struct {
	Allowed bool
	Rule    *Rule  // the rule that decided; nil when none matched
	Reason  string // when Rule is nil: why the path is allowed or not
}

// Decide says whether path (a URL's path and query, see [PathOf]) may be
// fetched. Of the rules that match, the one with the longest pattern wins,
// and Allow wins a tie (RFC 9309 §2.2.2); no matching rule allows.
// "/robots.txt" is decided like any other path, as Google's parser and
// its conformance suite do: RFC 9309 allows it implicitly, and a crawl
// does fetch it without asking, but as a page it is what the rules say.
func (r *Rules) Decide(path string) Decision {
	if r.fixed != nil {
		return *r.fixed
	}
	p := canonPath(path)
	var best *Rule
	for i := range r.rules {
		rule := &r.rules[i]
		if !match(rule.canon, p) {
			continue
		}
		if best == nil || len(rule.canon) > len(best.canon) ||
			len(rule.canon) == len(best.canon) && rule.Allow && !best.Allow {
			best = rule
		}
	}
	if best != nil {
		return Decision{Allowed: best.Allow, Rule: best}
	}
	if len(r.Groups) == 0 {
		return Decision{Allowed: true, Reason: fmt.Sprintf("no group for %q or \"*\"", r.Agent)}
	}
	g := r.Groups[0]
	reason := fmt.Sprintf("no rule matches in group %q (line %d)", g.Text, g.Line)
	if n := len(r.Groups) - 1; n > 0 {
		reason += fmt.Sprintf(" or the %d other groups for the same agent", n)
	}
	return Decision{Allowed: true, Reason: reason}
}

// Allowed is Decide(path).Allowed.
func (r *Rules) Allowed(path string) bool { return r.Decide(path).Allowed }

// PathOf returns the part of a URL robots.txt rules are matched against:
// its path, parameters and query, without the fragment, "/" when it has no
// path. The URL is taken as written, not decoded.
func PathOf(rawURL string) string {
	s, _, _ := strings.Cut(rawURL, "#")
	if i := strings.Index(s, "://"); i >= 0 && !strings.ContainsAny(s[:i], "/?") {
		s = s[i+3:]
		j := strings.IndexAny(s, "/?")
		if j < 0 {
			return "/"
		}
		s = s[j:]
	}
	if !strings.HasPrefix(s, "/") {
		s = "/" + s
	}
	return s
}

// canonPath puts a URL's path in the form patterns are compared in: its
// escapes in upper case, and its literal '*' and '$' escaped, since in a
// pattern they are operators. The path is otherwise taken as sent: a
// crawler sends it percent-encoded, and Google's parser, like this one,
// does not encode a literal non-ASCII path ("/ツ" is not "/%E3%83%84").
func canonPath(path string) string { return canon(path, false) }

// canonPattern puts a pattern in that form: its escapes in upper case and
// its octets outside US-ASCII percent-encoded (RFC 9309 §2.2.2), so that
// "/ツ", "/%E3%83%84" and "/%e3%83%84" are the same rule; its '*' stays a
// wildcard and a final '$' an end anchor, while "%2A" and "%24" stand for
// the characters. Escapes of unreserved characters are kept as they are
// ("/%61" is not "/a"), as in Google's parser.
func canonPattern(pattern string) string { return canon(pattern, true) }

func canon(s string, pattern bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			escape(&b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case pattern && c >= 0x80,
			!pattern && (c == '*' || c == '$'),
			pattern && c == '$' && i != len(s)-1:
			escape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func escape(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// match reports whether a pattern in canonical form, with '*' matching any
// run of characters and a final '$' anchoring it at the end, matches the
// start of path.
func match(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, parts[0]) {
		return false
	}
	rest := path[len(parts[0]):]
	if len(parts) == 1 {
		return !anchored || rest == ""
	}
	for _, p := range parts[1 : len(parts)-1] {
		j := strings.Index(rest, p)
		if j < 0 {
			return false
		}
		rest = rest[j+len(p):]
	}
	last := parts[len(parts)-1]
	if anchored {
		return strings.HasSuffix(rest, last)
	}
	return strings.Contains(rest, last)
}

// DecideFile reads data as a crawl reads a host's robots.txt (its first
// [MaxSize] bytes) and decides rawURL for agent: the answer of
// `spyder robots`.
func DecideFile(data []byte, agent, rawURL string) Decision {
	if len(data) > MaxSize {
		data = data[:MaxSize]
	}
	return Parse(data, agent).Decide(PathOf(rawURL))
}
