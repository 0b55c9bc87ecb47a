package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// lookupTypes are the queries every probe sends, all at once.
var lookupTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeNS, dns.TypeCNAME, dns.TypeMX, dns.TypeTXT}

// dnsAnswer is what the lookups of one host found.
type dnsAnswer struct {
	addrs []netip.Addr // A then AAAA, in answer order, distinct
	cname string       // target of the CNAME owned by the host, "" if none
	ns    []string
	mx    []string
	txt   []string

	status string // "ok", "nxdomain", "servfail", "timeout", "error"
	detail string
}

// resolver sends DNS queries to one server: all the questions of one host
// at once over one UDP socket, with a timeout and retries, and again over
// TCP for an answer that came back truncated.
type resolver struct {
	server  string
	tcp     *dns.Client
	timeout time.Duration
	retries int
}

// udpSize is the largest UDP answer we accept (EDNS0), and read.
const udpSize = dns.DefaultMsgSize

func newResolver(server string, timeout time.Duration, retries int) *resolver {
	return &resolver{
		server:  server,
		tcp:     &dns.Client{Net: "tcp", Timeout: timeout},
		timeout: timeout,
		retries: retries,
	}
}

// systemResolver returns the first nameserver of /etc/resolv.conf.
func systemResolver() (string, error) {
	conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil {
		return "", fmt.Errorf("read resolver: %w", err)
	}
	if len(conf.Servers) == 0 {
		return "", errors.New("read resolver: no nameserver in /etc/resolv.conf")
	}
	return net.JoinHostPort(conf.Servers[0], conf.Port), nil
}

// lookupAll runs every query for host in parallel and combines the answers
// by the edge rules of DESIGN.md §1.
func (r *resolver) lookupAll(ctx context.Context, host string) *dnsAnswer {
	msgs, qerrs := r.exchange(ctx, host, lookupTypes)
	type reply struct {
		msg *dns.Msg
		err error
	}
	replies := make([]reply, len(lookupTypes))
	for i := range replies {
		replies[i] = reply{msgs[i], qerrs[i]}
	}

	a := &dnsAnswer{}
	fqdn := dns.Fqdn(host)
	seenAddr := make(map[netip.Addr]bool)
	answered, nx := 0, 0
	var errs []string
	timedOut, servfail := false, false
	for i, rp := range replies {
		if rp.err != nil {
			errs = append(errs, dns.TypeToString[lookupTypes[i]]+": "+rp.err.Error())
			if isTimeout(rp.err) {
				timedOut = true
			}
			continue
		}
		answered++
		switch rp.msg.Rcode {
		case dns.RcodeSuccess:
		case dns.RcodeNameError:
			if len(rp.msg.Answer) == 0 {
				nx++
				continue
			}
		default:
			servfail = true
			errs = append(errs, dns.TypeToString[lookupTypes[i]]+": "+dns.RcodeToString[rp.msg.Rcode])
			continue
		}
		for _, rr := range rp.msg.Answer {
			owned := strings.EqualFold(rr.Header().Name, fqdn)
			if ip, ok := rrAddr(rr); ok && !seenAddr[ip] {
				seenAddr[ip] = true
				a.addrs = append(a.addrs, ip)
			}
			switch rr := rr.(type) {
			case *dns.CNAME:
				if owned && a.cname == "" {
					a.cname = dnsName(rr.Target)
				}
			case *dns.NS:
				if owned {
					a.ns = appendName(a.ns, dnsName(rr.Ns))
				}
			case *dns.MX:
				if owned && rr.Mx != "." {
					a.mx = appendName(a.mx, dnsName(rr.Mx))
				}
			case *dns.TXT:
				if owned {
					a.txt = append(a.txt, strings.Join(rr.Txt, ""))
				}
			}
		}
		if lookupTypes[i] == dns.TypeNS && len(a.ns) == 0 {
			// A delegation answered by a parent zone lists the host's own
			// name servers in the authority section.
			for _, rr := range rp.msg.Ns {
				if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, fqdn) {
					a.ns = appendName(a.ns, dnsName(ns.Ns))
				}
			}
		}
	}
	// Sorting the addresses A before AAAA keeps the dial order stable
	// whichever answer came back first.
	sortAddrs(a.addrs)
	switch {
	case answered > 0 && nx == answered:
		*a = dnsAnswer{status: "nxdomain"}
	case answered == 0 && timedOut:
		a.status, a.detail = "timeout", strings.Join(errs, "; ")
	case answered == 0:
		a.status, a.detail = "error", strings.Join(errs, "; ")
	case len(errs) > 0 && servfail && len(a.addrs) == 0:
		a.status, a.detail = "servfail", strings.Join(errs, "; ")
	case len(errs) > 0:
		a.status, a.detail = "partial", strings.Join(errs, "; ")
	default:
		a.status = "ok"
	}
	if ctx.Err() != nil && a.status != "ok" && a.status != "nxdomain" {
		a.status = "timeout"
	}
	return a
}

// exchange asks the server every question of types about host at once,
// over one UDP socket (one socket per host rather than per question keeps
// the system calls down), and returns the answers in the order of types.
// Questions still unanswered when an attempt times out are sent again, up to
// the resolver's retries; a truncated answer is asked again over TCP. An
// answer counts only if its ID and question match one we asked.
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

	fqdn := dns.Fqdn(host)
	queries := make([]*dns.Msg, len(types))
	wire := make([][]byte, len(types))
	byID := make(map[uint16]int, len(types))
	for i, t := range types {
		m := new(dns.Msg)
		m.SetQuestion(fqdn, t)
		m.RecursionDesired = true
		m.SetEdns0(udpSize, false)
		for _, taken := byID[m.Id]; taken; _, taken = byID[m.Id] {
			m.Id = dns.Id()
		}
		byID[m.Id] = i
		if wire[i], err = m.Pack(); err != nil {
			return fail(fmt.Errorf("dns: pack %s: %w", host, err))
		}
		queries[i] = m
	}

	truncated := make([]bool, len(types))
	pending := len(types)
	buf := make([]byte, udpSize)
	var lastErr error
	for attempt := 0; attempt <= r.retries && pending > 0 && ctx.Err() == nil; attempt++ {
		for i := range types {
			if msgs[i] == nil && !truncated[i] {
				if _, err := conn.Write(wire[i]); err != nil {
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
			i, ok := byID[m.Id]
			if !ok || msgs[i] != nil || truncated[i] || len(m.Question) != 1 ||
				m.Question[0].Qtype != types[i] || !strings.EqualFold(m.Question[0].Name, fqdn) {
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
	for i, t := range truncated {
		if t {
			msgs[i], _, errs[i] = r.tcp.ExchangeContext(ctx, queries[i], r.server)
		}
	}
	if lastErr == nil || ctx.Err() != nil {
		lastErr = os.ErrDeadlineExceeded
	}
	return fail(fmt.Errorf("dns: no answer: %w", lastErr))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// dnsName normalises a name from a DNS record: lowercase, no trailing dot.
func dnsName(s string) string {
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

func appendName(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func sortAddrs(a []netip.Addr) {
	// Stable insertion sort keeping IPv4 first; lists are short.
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Is4() && !a[j-1].Is4(); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// rrAddr returns the address of an A or AAAA record.
func rrAddr(rr dns.RR) (netip.Addr, bool) {
	switch rr := rr.(type) {
	case *dns.A:
		ip, ok := netip.AddrFromSlice(rr.A)
		return ip.Unmap(), ok
	case *dns.AAAA:
		return netip.AddrFromSlice(rr.AAAA)
	}
	return netip.Addr{}, false
}

// answerAddrs returns the distinct addresses in m's answer section.
func answerAddrs(m *dns.Msg) []netip.Addr {
	var out []netip.Addr
	for _, rr := range m.Answer {
		if ip, ok := rrAddr(rr); ok && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}
