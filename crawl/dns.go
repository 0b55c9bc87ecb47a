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
	"sync"
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

// resolver sends DNS queries to one server, over UDP with a fallback to TCP
// when an answer is truncated, with a timeout and retries per query.
type resolver struct {
	server  string
	udp     *dns.Client
	tcp     *dns.Client
	timeout time.Duration
	retries int
}

func newResolver(server string, timeout time.Duration, retries int) *resolver {
	return &resolver{
		server:  server,
		udp:     &dns.Client{Net: "udp", UDPSize: dns.DefaultMsgSize, Timeout: timeout},
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
	type reply struct {
		msg *dns.Msg
		err error
	}
	replies := make([]reply, len(lookupTypes))
	var wg sync.WaitGroup
	for i, t := range lookupTypes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := r.query(ctx, host, t)
			replies[i] = reply{m, err}
		}()
	}
	wg.Wait()

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

// query sends one question, retrying on network errors and timeouts, and
// repeating over TCP when the UDP answer is truncated.
func (r *resolver) query(ctx context.Context, host string, t uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), t)
	m.RecursionDesired = true
	m.SetEdns0(dns.DefaultMsgSize, false)
	var err error
	for attempt := 0; attempt <= r.retries; attempt++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		qctx, cancel := context.WithTimeout(ctx, r.timeout)
		var in *dns.Msg
		in, _, err = r.udp.ExchangeContext(qctx, m, r.server)
		if err == nil && in.Truncated {
			in, _, err = r.tcp.ExchangeContext(qctx, m, r.server)
		}
		cancel()
		if err == nil {
			return in, nil
		}
	}
	return nil, err
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
