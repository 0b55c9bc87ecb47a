package resolver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/internal/errtext"
)

// Cooldown is how long a resolver that stopped answering is set
// aside. When it has passed, one lookup tries the resolver again: if it
// answers, the resolver is back in rotation; if not, it is set aside for
// another Cooldown. A single trial lookup, rather than a share of
// all of them, keeps a resolver that is still down from costing many
// probes a timeout each.
const Cooldown = 30 * time.Second

// resolverMisses is how many attempts in a row a resolver may leave
// wholly unanswered before it is set aside. Any answer (SERVFAIL and
// REFUSED included: the server is there) resets the count, so under load a
// working resolver that drops the odd query is never set aside, while a
// dead one is within a few lookups.
const resolverMisses = 3

// ParseServers parses a comma-separated list of DNS servers: "host:port",
// a bare IP address (port 53), or an IPv6 address in brackets, with or
// without a port ("[2001:db8::53]:5353", "[::1]"); a bare IPv6 address
// without brackets also takes port 53. Blanks are skipped and repeats
// dropped. It returns the servers as "host:port", in the order given.
func ParseServers(s string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		server, err := parseResolver(item)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, server) {
			out = append(out, server)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resolver %q: no server given", s)
	}
	return out, nil
}

// ServersFrom returns the servers s names, comma-separated as
// [ParseServers] takes them: s itself, or, when s is a file (not a server
// list, and a path that exists or has a /), the servers it lists, one or
// more a line (comma-separated), with blank lines and # comments skipped,
// as dnsx's and massdns's resolver files hold them. Errors name the file
// and line; a file that cannot be read (missing, a directory) is said to
// be one, rather than parsed as a server.
func ServersFrom(s string) (string, error) {
	_, err := ParseServers(s)
	if err == nil {
		return s, nil
	}
	if _, statErr := os.Stat(s); statErr != nil && !strings.Contains(s, "/") {
		return "", err
	}
	data, err := os.ReadFile(s)
	if err != nil {
		return "", fmt.Errorf("resolver file %s could not be read: %w", s, errtext.Path(err))
	}
	var all []string
	for n, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		servers, err := ParseServers(line)
		if err != nil {
			return "", fmt.Errorf("resolver file %s: line %d: %w", s, n+1, err)
		}
		all = append(all, servers...)
	}
	if len(all) == 0 {
		return "", fmt.Errorf("resolver file %s: no server in it", s)
	}
	return strings.Join(all, ","), nil
}

func parseResolver(s string) (string, error) {
	bad := fmt.Errorf("resolver %q: want IP, host:port, IP:port or [IPv6]:port", s)
	bare := s
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		bare = s[1 : len(s)-1]
	}
	if ip, err := netip.ParseAddr(bare); err == nil {
		return net.JoinHostPort(ip.String(), "53"), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", bad
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("resolver %q: port %q is not a number from 1 to 65535", s, port)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
	} else if strings.ContainsAny(host, " []/") {
		return "", bad
	}
	return net.JoinHostPort(host, port), nil
}

// Stats is what one resolver did since the [Crawler] started.
type Stats struct {
	spyder.ResolverCounts
	Up       bool   // in rotation (false: set aside after it stopped answering)
	SetAside uint64 // times it was set aside
}

// queryResult is how one query to one resolver ended.
type queryResult int

const (
	resAnswer queryResult = iota
	resTimeout
	resError
	resServFail
	resRefused
	resTruncated
	nResults
)

// count returns the counter of c that r adds to.
func count(c *spyder.ResolverCounts, r queryResult) *uint64 {
	return [nResults]*uint64{&c.Answers, &c.Timeouts, &c.Errors, &c.ServFail, &c.Refused, &c.Truncated}[r]
}

// upstream is one resolver: its counters and whether it is in rotation.
// It is safe for concurrent use.
type upstream struct {
	server   string
	counts   [nResults]atomic.Uint64
	setAside atomic.Uint64

	mu        sync.Mutex
	misses    int       // attempts in a row it left wholly unanswered
	downUntil time.Time // zero while in rotation
	trial     bool      // a lookup is trying it after its cooldown
}

// claim reports whether a lookup may use u at now: it is in rotation, or
// its cooldown has passed and no other lookup is trying it yet (trial is
// then true: this lookup is the one).
func (u *upstream) claim(now time.Time) (ok, trial bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.downUntil.IsZero():
		return true, false
	case now.Before(u.downUntil) || u.trial:
		return false, false
	}
	u.trial = true
	return true, true
}

// attemptEnd is how an attempt on one resolver ended, for its health.
type attemptEnd int

const (
	attemptAnswered  attemptEnd = iota // something came back
	attemptMissed                      // nothing came back in time
	attemptAbandoned                   // the lookup was cancelled first: no verdict
)

// report records how an attempt ended, trial or not: an answer puts u back
// in rotation; a miss on trial, or the resolverMisses-th in a row, sets it
// aside until now+cooldown.
func (u *upstream) report(now time.Time, end attemptEnd, trial bool, cooldown time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if trial {
		u.trial = false
	}
	switch end {
	case attemptAnswered:
		u.misses, u.downUntil = 0, time.Time{}
	case attemptMissed:
		u.misses++
		if trial || u.downUntil.IsZero() && u.misses >= resolverMisses {
			u.downUntil = now.Add(cooldown)
			u.setAside.Add(1)
		}
	}
}

func (u *upstream) stats() Stats {
	s := Stats{ResolverCounts: spyder.ResolverCounts{Server: u.server}, SetAside: u.setAside.Load()}
	for r := range nResults {
		*count(&s.ResolverCounts, r) = u.counts[r].Load()
	}
	u.mu.Lock()
	s.Up = u.downUntil.IsZero()
	u.mu.Unlock()
	return s
}

// Stats returns, for each resolver in the order configured, how its
// queries ended and whether it is in rotation. It is safe to call at any
// time, from any goroutine.
func (r *Client) Stats() []Stats {
	out := make([]Stats, len(r.ups))
	for i, u := range r.ups {
		out[i] = u.stats()
	}
	return out
}

// errNoResolver reports a lookup that found no resolver worth asking.
var errNoResolver = errors.New("dns: no resolver left to ask")
