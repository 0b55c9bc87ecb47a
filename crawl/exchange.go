package crawl

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// exchange asks the server every question of types about host at once,
// over one UDP socket (one socket per host rather than per question keeps
// the system calls down), and returns the answers in the order of types.
// Questions still unanswered when an attempt times out are sent again, up to
// the resolver's retries; a truncated answer is asked again over TCP. An
// answer counts only if its ID and question match one we asked. Each
// question ends with either an answer or an error, never both missing.
func (r *resolver) exchange(ctx context.Context, host string, types []uint16) ([]*dns.Msg, []error) {
	msgs := make([]*dns.Msg, len(types))
	errs := make([]error, len(types))
	fail := func(err error) ([]*dns.Msg, []error) {
		for i := range errs {
			if msgs[i] == nil && errs[i] == nil {
				errs[i] = err
			}
		}
		return msgs, errs
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", r.server)
	if err != nil {
		return fail(fmt.Errorf("dns: %w", err))
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	qs, err := newQuestions(host, types)
	if err != nil {
		return fail(fmt.Errorf("dns: pack %s: %w", host, err))
	}
	truncated, lastErr := r.exchangeUDP(ctx, conn, qs, msgs)
	for i, t := range truncated {
		if t {
			msgs[i], _, errs[i] = r.tcp.ExchangeContext(ctx, qs.queries[i], r.server)
		}
	}
	if lastErr == nil || ctx.Err() != nil {
		lastErr = os.ErrDeadlineExceeded
	}
	return fail(fmt.Errorf("dns: no answer: %w", lastErr))
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

// exchangeUDP sends the questions over conn and reads answers into msgs
// until each question has one, sending those still unanswered again after
// each read timeout, up to the resolver's retries, and stopping when ctx
// ends. An answer that came back truncated is not kept: truncated marks it
// for the caller to ask over TCP. lastErr is the last write or read error.
func (r *resolver) exchangeUDP(ctx context.Context, conn net.Conn, qs *dnsQuestions, msgs []*dns.Msg) (truncated []bool, lastErr error) {
	truncated = make([]bool, len(qs.types))
	pending := len(qs.types)
	buf := make([]byte, udpSize)
	for attempt := 0; attempt <= r.retries && pending > 0 && ctx.Err() == nil; attempt++ {
		for i := range qs.types {
			if msgs[i] == nil && !truncated[i] {
				if _, err := conn.Write(qs.wire[i]); err != nil {
					lastErr = err
				}
			}
		}
		conn.SetReadDeadline(time.Now().Add(r.timeout))
		for pending > 0 {
			n, err := conn.Read(buf)
			if err != nil {
				lastErr = err
				break // timed out, refused or cancelled: next attempt
			}
			m := new(dns.Msg)
			if m.Unpack(buf[:n]) != nil {
				continue
			}
			i, ok := qs.match(m)
			if !ok || msgs[i] != nil || truncated[i] {
				continue
			}
			pending--
			if m.Truncated {
				truncated[i] = true
				continue
			}
			msgs[i] = m
		}
	}
	return truncated, lastErr
}
