package resolver

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/spyder-crawler/spyder"
)

// lookup is the state of one exchange: the questions, the answers so far
// and, per question, the servers that answered it SERVFAIL or REFUSED.
type lookup struct {
	r      *Client
	qs     *dnsQuestions
	final  []*dns.Msg              // answers to keep
	failed []*dns.Msg              // the last SERVFAIL or REFUSED answer, kept if no other comes
	errs   []error                 // the last error of a question without an answer
	badAt  [][]int                 // servers (index in r.ups) that answered SERVFAIL or REFUSED
	asked  []bool                  // servers this lookup has asked
	socks  []*socketUse            // by server (index in r.ups), nil until used
	inbox  chan dnsPacket          // answers from every server asked
	later  []dnsPacket             // answers from a server other than the one being asked
	order  []int                   // servers in the order first asked
	counts []spyder.ResolverCounts // by server, set once asked
}

// socketUse is a lookup's share of a socket to one server: the IDs its
// questions carry there, and the questions packed with them.
type socketUse struct {
	s    *udpSocket
	ids  []uint16 // by question
	wire [][]byte // by question
}

// exchange asks every question of types about host, all at once over a
// UDP socket shared with other lookups (see socketPool), and returns the answers in the order of
// types with, per server asked, how its queries ended. There are at most
// 1+retries attempts; each goes to the server [resolver.pick] chooses and
// waits up to the timeout for the questions it sends. A truncated answer
// is asked again over TCP of the same server. An answer counts only if its
// ID (on that server's socket) and question match one we asked. Each question ends with either an
// answer or an error, never both missing.
func (r *Client) exchange(ctx context.Context, host string, types []uint16) ([]*dns.Msg, []error, []spyder.ResolverCounts) {
	n := len(types)
	l := &lookup{r: r, final: make([]*dns.Msg, n), failed: make([]*dns.Msg, n), errs: make([]error, n),
		badAt: make([][]int, n), asked: make([]bool, len(r.ups)), socks: make([]*socketUse, len(r.ups)),
		inbox: make(chan dnsPacket, n*(r.retries+1)+2), counts: make([]spyder.ResolverCounts, len(r.ups))}
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
func (r *Client) pick(start int, asked []bool, useful func(int) bool) (u int, trial, ok bool) {
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
		l.counts[u] = spyder.ResolverCounts{Server: l.r.ups[u].server}
	}
	use, err := l.socket(ctx, u)
	if err != nil {
		for _, i := range want {
			l.fail(u, i, fmt.Errorf("dns: %w", err))
		}
		return attemptMissed
	}
	queries := make([][]byte, len(want))
	for k, i := range want {
		queries[k] = use.wire[i]
	}
	if err := l.r.awaitRate(ctx, len(queries)); err != nil {
		for _, i := range want { // not the server's fault: not counted
			l.errs[i] = fmt.Errorf("dns: query rate: %w", err)
		}
		return attemptAbandoned
	}
	lastErr := use.s.send(queries)
	waiting := slices.Clone(want)
	var truncated []int
	end := attemptMissed
	timer := time.NewTimer(l.r.timeout)
	defer timer.Stop()
	for len(waiting) > 0 {
		pkt, ok := l.receive(ctx, u, timer)
		if !ok {
			break // timed out or cancelled
		}
		if pkt.err != nil {
			lastErr = pkt.err
			break // refused
		}
		m := new(dns.Msg)
		if m.Unpack(pkt.b) != nil {
			continue
		}
		i, ok := l.qs.match(m, use.ids)
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
		q := l.qs.query(i)
		q.Id = dns.Id()
		if err := l.r.awaitRate(ctx, 1); err != nil {
			l.errs[i] = fmt.Errorf("dns: query rate: %w", err)
			continue
		}
		m, _, err := l.r.tcp.ExchangeContext(ctx, q, l.r.ups[u].server)
		if err != nil {
			l.fail(u, i, fmt.Errorf("dns over tcp: %w", err))
			continue
		}
		l.take(u, i, m)
	}
	return end
}

// receive returns the next answer from server u: one kept from an earlier
// wait, or one that comes before the timer fires or ctx ends. Answers from
// other servers (late ones to an earlier attempt) are kept for when the
// lookup asks that server again.
func (l *lookup) receive(ctx context.Context, u int, timer *time.Timer) (dnsPacket, bool) {
	for k, pkt := range l.later {
		if pkt.u == u {
			l.later = slices.Delete(l.later, k, k+1)
			return pkt, true
		}
	}
	for {
		select {
		case pkt := <-l.inbox:
			if pkt.u == u {
				return pkt, true
			}
			l.later = append(l.later, pkt)
		case <-timer.C:
			return dnsPacket{}, false
		case <-ctx.Done():
			return dnsPacket{}, false
		}
	}
}

// socket returns the lookup's share of a socket to server u, taken on
// first use and kept for a later attempt on the same server, so that a
// late answer to an earlier attempt still counts.
func (l *lookup) socket(ctx context.Context, u int) (*socketUse, error) {
	if use := l.socks[u]; use != nil {
		return use, nil
	}
	s, ids, err := l.r.pools[u].acquire(ctx, len(l.qs.types), l.inbox)
	if err != nil {
		return nil, err
	}
	use := &socketUse{s: s, ids: ids, wire: l.qs.pack(ids)}
	l.socks[u] = use
	return use, nil
}

func (l *lookup) close() {
	for _, use := range l.socks {
		if use != nil {
			use.s.release(use.ids)
		}
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
	*count(&l.counts[u], res)++
	l.r.ups[u].counts[res].Add(1)
}

// result returns each question's answer (a SERVFAIL or REFUSED one when no
// other came) or error, and the servers' counts in the order asked.
func (l *lookup) result(ctx context.Context) ([]*dns.Msg, []error, []spyder.ResolverCounts) {
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
	counts := make([]spyder.ResolverCounts, len(l.order))
	for k, u := range l.order {
		counts[k] = l.counts[u]
	}
	return l.final, l.errs, counts
}

// dnsQuestions are the queries about one host: one query packed once, of
// which each socket gets copies carrying its IDs (see socketUse) and each
// question's type.
type dnsQuestions struct {
	fqdn   string
	types  []uint16
	packed []byte // the query of types[0], ID 0
	typeAt int    // where the question's type is in packed
}

// newQuestions builds a recursive EDNS0 query of each of types about host.
// The queries differ only in the ID and the question's type, so one is
// packed and the others are copies with those two fields set: a probe
// packs one message instead of one per type.
func newQuestions(host string, types []uint16) (*dnsQuestions, error) {
	qs := &dnsQuestions{fqdn: dns.Fqdn(host), types: types}
	var err error
	if qs.packed, err = qs.query(0).Pack(); err != nil {
		return nil, err
	}
	// The question's name follows the 12-byte header, uncompressed: its
	// labels, each after its length, then a zero byte, then the type.
	at := 12
	for qs.packed[at] != 0 {
		at += int(qs.packed[at]) + 1
	}
	qs.typeAt = at + 1
	return qs, nil
}

// query returns question i as a message, ID 0, as sent over TCP.
func (qs *dnsQuestions) query(i int) *dns.Msg {
	m := &dns.Msg{
		MsgHdr:   dns.MsgHdr{RecursionDesired: true},
		Question: []dns.Question{{Name: qs.fqdn, Qtype: qs.types[i], Qclass: dns.ClassINET}},
	}
	m.SetEdns0(udpSize, false)
	return m
}

// pack returns every question packed, question i with ID ids[i], in one
// allocation.
func (qs *dnsQuestions) pack(ids []uint16) [][]byte {
	n := len(qs.packed)
	buf := make([]byte, n*len(qs.types))
	wire := make([][]byte, len(qs.types))
	for i, t := range qs.types {
		w := buf[i*n : (i+1)*n : (i+1)*n]
		copy(w, qs.packed)
		binary.BigEndian.PutUint16(w, ids[i])
		binary.BigEndian.PutUint16(w[qs.typeAt:], t)
		wire[i] = w
	}
	return wire
}

// match returns the index of the question m answers: its ID is the one
// that question carried (ids, by question), and its single question is
// that query's type and name. Anything else (a stray or forged packet)
// answers nothing.
func (qs *dnsQuestions) match(m *dns.Msg, ids []uint16) (int, bool) {
	i := slices.Index(ids, m.Id)
	if i < 0 || len(m.Question) != 1 ||
		m.Question[0].Qtype != qs.types[i] || !strings.EqualFold(m.Question[0].Name, qs.fqdn) {
		return 0, false
	}
	return i, true
}
