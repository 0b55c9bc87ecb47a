// Package host holds spyder's host name: the one canonical form every part
// of the crawl speaks, and the parser that is the only way to make one. A
// host enters spyder once (a domains file, a link on a page, a DNS answer,
// an item pushed into the queue by hand), is parsed there, and travels as a
// [Name] from then on, so nothing downstream normalises it again.
package host

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Name is a host name in canonical form: lower case ASCII (Unicode labels
// in punycode), no trailing dot, at least two labels, none empty or over 63
// bytes, at most 253 bytes, not an IP address. [Parse] returns one; a
// conversion from a string is only for text that already is one (a
// constant, a value spyder itself stored).
type Name string

// String returns the name as text.
func (n Name) String() string { return string(n) }

// Apex returns n's registrable domain: its public suffix and one label
// more (eTLD+1, by the public suffix list), so that a.example.co.uk and
// b.example.co.uk share the apex example.co.uk. A name with no
// registrable domain (a public suffix itself, such as co.uk) is its own
// apex.
func (n Name) Apex() Name {
	a, err := publicsuffix.EffectiveTLDPlusOne(string(n))
	if err != nil {
		return n
	}
	return Name(a)
}

// ErrInvalid is matched (with errors.Is) by every [*Error].
var ErrInvalid = errors.New("invalid host")

// Error is input that is not a host name, with why. Read it with errors.As
// to report Input and Reason in a caller's own words.
type Error struct {
	Input  string // the input as given, whole
	Reason string // why it is not a host name, e.g. "bad character '!'"
}

// maxQuoted is how much of the input Error's message quotes: a 10 MB line
// is named by its start, not printed whole.
const maxQuoted = 80

func (e *Error) Error() string {
	in := e.Input
	if len(in) > maxQuoted {
		in = in[:maxQuoted] + "…"
	}
	return fmt.Sprintf("invalid host %q: %s", in, e.Reason)
}

// Is makes every Error match [ErrInvalid].
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// idnaProfile maps Unicode names to their ASCII (punycode) form as lookups
// do; label syntax is checked by Parse itself so that the reason given
// is precise and underscores (common in real hostnames) stay accepted.
var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false))

// Parse turns user or network input into a [Name]: trimmed, a URL or
// host:port reduced to its host, lowercased, trailing dot stripped, IDN
// converted to punycode. It rejects, with an [*Error] giving the reason,
// names that are empty, too long (over 253 bytes, or a label over 63),
// contain an empty label or a character not allowed in a hostname, have a
// single label, or are IP addresses.
func Parse(in string) (Name, error) {
	if isCanonical(in) {
		return Name(in), nil
	}
	s, err := parse(in)
	return Name(s), err
}

// parse is Parse without the fast path.
func parse(in string) (string, error) {
	s := strings.TrimSpace(strings.TrimPrefix(in, "\ufeff"))
	if s == "" {
		return "", invalid(in, "empty")
	}
	if len(s) > 2048 {
		return "", invalid(in, "too long")
	}
	if strings.HasPrefix(s, "//") { // scheme-relative URL
		s = "http:" + s
	}
	if i := strings.Index(s, "://"); i > 0 {
		u, err := url.Parse(s)
		if err != nil {
			return "", invalid(in, "not a valid URL")
		}
		s = u.Hostname()
	} else {
		if i := strings.IndexAny(s, "/?#"); i >= 0 {
			s = s[:i]
		}
		if h, port, ok := strings.Cut(s, ":"); ok && port != "" && allDigits(port) && !strings.Contains(port, ":") {
			s = h
		}
	}
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") > 1 {
		return "", invalid(in, "IP address, not a host name")
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return "", invalid(in, "IP address, not a host name")
	}
	s = strings.ToLower(s)
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", invalid(in, "empty")
	}
	if !isASCII(s) {
		a, err := idnaProfile.ToASCII(s)
		if err != nil {
			return "", invalid(in, "not a valid internationalised name")
		}
		s = a
	}
	if len(s) > 253 {
		return "", invalid(in, fmt.Sprintf("too long (%d bytes, at most 253)", len(s)))
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return "", invalid(in, "single label, not a domain name")
	}
	for _, l := range labels {
		switch {
		case l == "":
			return "", invalid(in, "empty label")
		case len(l) > 63:
			return "", invalid(in, fmt.Sprintf("label %.20q… too long (%d bytes, at most 63)", l, len(l)))
		case l[0] == '-' || l[len(l)-1] == '-':
			return "", invalid(in, fmt.Sprintf("label %q starts or ends with a hyphen", l))
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", invalid(in, fmt.Sprintf("bad character %q", c))
			}
		}
		if strings.HasPrefix(l, "xn--") {
			if u, err := idnaProfile.ToUnicode(l); err != nil || u == "" {
				return "", invalid(in, fmt.Sprintf("label %q is not valid punycode", l))
			}
		}
	}
	if allDigits(labels[len(labels)-1]) {
		return "", invalid(in, "numeric top-level label")
	}
	return s, nil
}

// isCanonical reports whether s is already a valid normalised host, so
// that Parse would return it unchanged; it lets stored items decode
// without the allocations of the full path. It is conservative: false only
// means "take the full path" (as for every punycode label, which the full
// path checks).
func isCanonical(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	labels, start, digitsOnly := 0, 0, true
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			l := s[start:i]
			if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.HasPrefix(l, "xn--") {
				return false
			}
			labels++
			start = i + 1
			continue
		}
		c := s[i]
		if i == start {
			digitsOnly = true
		}
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z' || c == '-' || c == '_':
			digitsOnly = false
		default:
			return false
		}
	}
	return labels >= 2 && !digitsOnly
}

func invalid(in, reason string) error {
	return &Error{Input: in, Reason: reason}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
