package crawl

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// resolver sends DNS queries to one or more servers. Each lookup starts at
// the next server in turn, so lookups spread evenly over those in
// rotation; a server that leaves an attempt unanswered, or answers
// SERVFAIL or REFUSED, hands the questions to the next. It is safe for
// concurrent use.
type resolver struct {
	ups      []*upstream
	next     atomic.Uint64 // rotation: where the next lookup starts
	tcp      *dns.Client
	timeout  time.Duration
	retries  int
	now      func() time.Time
	cooldown time.Duration
}

func newResolver(servers []string, timeout time.Duration, retries int, now func() time.Time) *resolver {
	r := &resolver{
		tcp:      &dns.Client{Net: "tcp", Timeout: timeout},
		timeout:  timeout,
		retries:  retries,
		now:      now,
		cooldown: ResolverCooldown,
	}
	for _, s := range servers {
		r.ups = append(r.ups, &upstream{server: s})
	}
	return r
}

// lookup is the state of one exchange: the questions, the answers so far
// and, per question, the servers that answered it SERVFAIL or REFUSED.
type lookup struct {
	r      *resolver
	qs     *dnsQuestions
	final  []*dns.Msg // answers to keep
	failed []*dns.Msg // the last SERVFAIL or REFUSED answer, kept if no other comes
	errs   []error    // the last error of a question without an answer
	badAt  [][]int    // servers (index in r.ups) that answered SERVFAIL or REFUSED
	asked  []bool     // servers this lookup has asked
	conns  map[int]net.Conn
	order  []int // servers in the order first asked
	counts map[int]*ResolverCounts
}

// exchange asks every question of types about host, all at once over one
// UDP socket per server (one socket per host rather than per question
// keeps the system calls down), and returns the answers in the order of
// types with, per server asked, how its queries ended. There are at most
// 1+retries attempts; each goes to the server [resolver.pick] chooses and
// waits up to the timeout for the questions it sends. A truncated answer
// is asked again over TCP of the same server. An answer counts only if its
// ID and question match one we asked. Each question ends with either an
// answer or an error, never both missing.
func (r *resolver) exchange(ctx context.Context, host string, types []uint16) ([]*dns.Msg, []error, []ResolverCounts) {
	n := len(types)
	l := &lookup{r: r, final: make([]*dns.Msg, n), failed: make([]*dns.Msg, n), errs: make([]error, n),
		badAt: make([][]int, n), asked: make([]bool, len(r.ups)), conns: map[int]net.Conn{},
		counts: map[int]*ResolverCounts{}}
	defer l.close()
	qs, err := newQuestions(host, types)
	if err != nil {
		for i := range l.errs {
			l.errs[i] = fmt.Errorf("dns: pack %s: %w", host, err)
		}
		return l.final, l.errs, nil
	}
	l.qs = qs
	start := int((r.next.Add(1) - 1) % uint64(len(r.ups)))
	for attempt := 0; attempt <= r.retries && ctx.Err() == nil; attempt++ {
		u, trial, ok := r.pick(start, l.asked, l.useful)
		if !ok {
			break
		}
		end := l.ask(ctx, u, l.want(u))
		if end == attemptMissed && ctx.Err() != nil {
			end = attemptAbandoned
		}
		r.ups[u].report(r.now(), end, trial, r.cooldown)
	}
	return l.result(ctx)
}

// useful reports whether server u could still answer a question: one
// without an answer that u has not answered SERVFAIL or REFUSED.
func (l *lookup) useful(u int) bool { return len(l.want(u)) > 0 }

// want returns the questions to send to server u.
func (l *lookup) want(u int) []int {
	var out []int
	for i := range l.final {
		if l.final[i] == nil && !slices.Contains(l.badAt[i], u) {
			out = append(out, i)
		}
	}
	return out
}

// pick returns the server for a lookup's next attempt, in rotation order
// from start: the first in rotation that the lookup has not asked yet,
// else the first in rotation, else (every one set aside) the first not
// asked yet, else any; always one useful to the lookup. trial reports that
// the lookup is the one trying a server whose cooldown has passed; ok is
// false when no server is useful.
func (r *resolver) pick(start int, asked []bool, useful func(int) bool) (u int, trial, ok bool) {
	n := len(r.ups)
	now := r.now()
	for _, inRotation := range []bool{true, false} {
		for _, fresh := range []bool{true, false} {
			for k := range n {
				i := (start + k) % n
				if fresh && asked[i] || !useful(i) {
					continue
				}
				if !inRotation {
					return i, false, true
				}
				if ok, trial := r.ups[i].claim(now); ok {
					return i, trial, true
				}
			}
		}
	}
	return 0, false, false
}

// ask sends the questions want to server u over UDP and reads answers until
// each has one or the timeout passes, then asks the truncated ones again
// over TCP. It counts every query's outcome and says whether u answered.
func (l *lookup) ask(ctx context.Context, u int, want []int) attemptEnd {
	if !l.asked[u] {
		l.asked[u] = true
		l.order = append(l.order, u)
		l.counts[u] = &ResolverCounts{Server: l.r.ups[u].server}
	}
	conn, err := l.conn(ctx, u)
	if err != nil {
		for _, i := range want {
			l.fail(u, i, fmt.Errorf("dns: %w", err))
		}
		return attemptMissed
	}
	var lastErr error
	for _, i := range want {
		if _, err := conn.Write(l.qs.wire[i]); err != nil {
			lastErr = err
		}
	}
	conn.SetReadDeadline(time.Now().Add(l.r.timeout))
	waiting := slices.Clone(want)
	var truncated []int
	end := attemptMissed
	buf := make([]byte, udpSize)
	for len(waiting) > 0 {
		n, err := conn.Read(buf)
		if err != nil {
			lastErr = err
			break // timed out, refused or cancelled
		}
		m := new(dns.Msg)
		if m.Unpack(buf[:n]) != nil {
			continue
		}
		i, ok := l.qs.match(m)
		k := slices.Index(waiting, i)
		if !ok || k < 0 {
			continue // stray, or a repeat of an answer already read
		}
		waiting = slices.Delete(waiting, k, k+1)
		end = attemptAnswered
		if m.Truncated {
			truncated = append(truncated, i)
			continue
		}
		l.take(u, i, m)
	}
	if lastErr == nil || ctx.Err() != nil {
		lastErr = os.ErrDeadlineExceeded
	}
	for _, i := range waiting {
		l.fail(u, i, fmt.Errorf("dns: no answer: %w", lastErr))
	}
	for _, i := range truncated {
		l.count(u, resTruncated)
		m, _, err := l.r.tcp.ExchangeContext(ctx, l.qs.queries[i], l.r.ups[u].server)
		if err != nil {
			l.fail(u, i, fmt.Errorf("dns over tcp: %w", err))
			continue
		}
		l.take(u, i, m)
	}
	return end
}

// conn returns the lookup's UDP socket to server u, opened on first use
// and kept for a later attempt on the same server, so that a late answer
// to an earlier attempt still counts. Cancelling ctx interrupts its reads.
func (l *lookup) conn(ctx context.Context, u int) (net.Conn, error) {
	if c, ok := l.conns[u]; ok {
		return c, nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", l.r.ups[u].server)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	l.conns[u] = &stoppingConn{Conn: c, stop: stop}
	return l.conns[u], nil
}

// stoppingConn is a socket whose Close also drops its cancellation hook.
type stoppingConn struct {
	net.Conn
	stop func() bool
}

func (c *stoppingConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

func (l *lookup) close() {
	for _, c := range l.conns {
		c.Close()
	}
}

// take records answer m to question i from server u: kept, or, for
// SERVFAIL and REFUSED, kept aside while another server may do better.
func (l *lookup) take(u, i int, m *dns.Msg) {
	switch m.Rcode {
	case dns.RcodeServerFailure, dns.RcodeRefused:
		res := resServFail
		if m.Rcode == dns.RcodeRefused {
			res = resRefused
		}
		l.count(u, res)
		l.failed[i] = m
		l.badAt[i] = append(l.badAt[i], u)
	default:
		l.count(u, resAnswer)
		l.final[i] = m
	}
}

// fail records that server u left question i unanswered.
func (l *lookup) fail(u, i int, err error) {
	if isTimeout(err) {
		l.count(u, resTimeout)
	} else {
		l.count(u, resError)
	}
	l.errs[i] = err
}

func (l *lookup) count(u int, res queryResult) {
	l.counts[u].add(res)
	l.r.ups[u].counts[res].Add(1)
}

// result returns each question's answer (a SERVFAIL or REFUSED one when no
// other came) or error, and the servers' counts in the order asked.
func (l *lookup) result(ctx context.Context) ([]*dns.Msg, []error, []ResolverCounts) {
	for i := range l.final {
		switch {
		case l.final[i] != nil:
			l.errs[i] = nil
		case l.failed[i] != nil:
			l.final[i], l.errs[i] = l.failed[i], nil
		case l.errs[i] == nil && ctx.Err() != nil:
			l.errs[i] = fmt.Errorf("dns: no answer: %w", os.ErrDeadlineExceeded)
		case l.errs[i] == nil:
			l.errs[i] = errNoResolver
		}
	}
	counts := make([]ResolverCounts, len(l.order))
	for k, u := range l.order {
		counts[k] = *l.counts[u]
	}
	return l.final, l.errs, counts
}

// dnsQuestions are the queries about one host, packed once to be sent as
// often as retries need. Their IDs are distinct, so that an answer maps
// back to the one question it answers.
type dnsQuestions struct {
	fqdn    string
	types   []uint16
	queries []*dns.Msg
	wire    [][]byte
	byID    map[uint16]int // query ID → index in types
}

// newQuestions builds a recursive EDNS0 query of each of types about host,
// drawing a new ID for any that collides with an earlier one.
func newQuestions(host string, types []uint16) (*dnsQuestions, error) {
	qs := &dnsQuestions{
		fqdn:    dns.Fqdn(host),
		types:   types,
		queries: make([]*dns.Msg, len(types)),
		wire:    make([][]byte, len(types)),
		byID:    make(map[uint16]int, len(types)),
	}
	for i, t := range types {
		m := new(dns.Msg)
		m.SetQuestion(qs.fqdn, t)
		m.RecursionDesired = true
		m.SetEdns0(udpSize, false)
		for _, taken := qs.byID[m.Id]; taken; _, taken = qs.byID[m.Id] {
			m.Id = dns.Id()
		}
		qs.byID[m.Id] = i
		var err error
		if qs.wire[i], err = m.Pack(); err != nil {
			return nil, err
		}
		qs.queries[i] = m
	}
	return qs, nil
}

// match returns the index of the question m answers: its ID is one we
// used, and its single question is that query's type and name. Anything
// else (a stray or spoofed packet) answers nothing.
func (qs *dnsQuestions) match(m *dns.Msg) (int, bool) {
	i, ok := qs.byID[m.Id]
	if !ok || len(m.Question) != 1 ||
		m.Question[0].Qtype != qs.types[i] || !strings.EqualFold(m.Question[0].Name, qs.fqdn) {
		return 0, false
	}
	return i, true
}
