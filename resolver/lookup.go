package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// lookupTypes are the queries every probe sends, all at once. A CNAME
// query is not among them: the answer to any query of a name that owns a
// CNAME carries it (RFC 1034 §4.3.2), so asking for it as well would add a
// sixth to every host's queries and learn nothing. See lookupAll for when
// it is asked.
var lookupTypes = []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeNS, dns.TypeMX, dns.TypeTXT}

// cnameType is the query lookupAll adds when the others leave the CNAME
// unknown.
var cnameType = []uint16{dns.TypeCNAME}

// Answer is what the lookups of one host found.
type Answer struct {
	Addrs []netip.Addr // A then AAAA, in answer order, distinct
	CNAME host.Name    // target of the CNAME owned by the host, "" if none
	NS    []host.Name
	MX    []host.Name
	TXT   []string

	Status string // "ok", "nxdomain", "servfail", "partial", "timeout", "error"
	Detail string
	// Resolvers counts, per resolver asked, how the queries ended.
	Resolvers []spyder.ResolverCounts
}

// udpSize is the largest UDP answer we accept (EDNS0), and read.
const udpSize = dns.DefaultMsgSize

// SystemServer returns every nameserver of /etc/resolv.conf, as a
// comma-separated list [ParseServers] takes, so that lookups spread over
// them all and go on when one is down.
func SystemServer() (string, error) {
	return systemServers("/etc/resolv.conf")
}

func systemServers(path string) (string, error) {
	conf, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return "", fmt.Errorf("read resolver: %w", err)
	}
	if len(conf.Servers) == 0 {
		return "", fmt.Errorf("read resolver: no nameserver in %s", path)
	}
	servers := make([]string, len(conf.Servers))
	for i, s := range conf.Servers {
		servers[i] = net.JoinHostPort(s, conf.Port)
	}
	return strings.Join(servers, ","), nil
}

// LookupAll runs every query for h in parallel and combines the answers
// into what a visit records: every distinct address in the answers
// (those at the end of a CNAME chain included), IPv4 before IPv6; the
// target of the CNAME owned by h itself; the NS, MX (not a null MX ".")
// and TXT records owned by h, and, when the answer holds no NS record of
// h, those of a delegation's authority section. Names that are not host
// names are left out. The status says how the queries ended.
//
// When a server answered but every answer was a failure such as SERVFAIL,
// the CNAME is asked for on its own: a resolver that cannot reach an
// alias's target fails every other query of the alias, yet answers this
// one from the alias's own zone, and the dangling alias is worth its edge.
// When no server answered at all, the same silence would only make the
// lookup wait twice as long, so it is not asked.
func (r *Client) LookupAll(ctx context.Context, h host.Name) *Answer {
	name := string(h)
	types := lookupTypes
	msgs, qerrs, counts := r.exchange(ctx, name, types)
	if cnameUnknown(msgs) && ctx.Err() == nil {
		m, e, c := r.exchange(ctx, name, cnameType)
		types = append(slices.Clip(types), cnameType...)
		msgs, qerrs, counts = append(msgs, m...), append(qerrs, e...), addCounts(counts, c)
	}
	return combine(ctx, name, types, msgs, qerrs, counts)
}

// cnameUnknown reports whether answers to lookupTypes leave unknown
// whether the name owns a CNAME: no query was answered with success or
// NXDOMAIN (either would carry the CNAME), yet at least one was answered.
func cnameUnknown(msgs []*dns.Msg) bool {
	answered := false
	for _, m := range msgs {
		if m == nil {
			continue
		}
		if m.Rcode == dns.RcodeSuccess || m.Rcode == dns.RcodeNameError {
			return false
		}
		answered = true
	}
	return answered
}

// addCounts adds more's counts to those of the same server in counts,
// appending servers counts does not hold, and returns the result.
func addCounts(counts, more []spyder.ResolverCounts) []spyder.ResolverCounts {
	for _, m := range more {
		i := slices.IndexFunc(counts, func(c spyder.ResolverCounts) bool { return c.Server == m.Server })
		if i < 0 {
			counts = append(counts, m)
			continue
		}
		for r := range nResults {
			*count(&counts[i], r) += *count(&m, r)
		}
	}
	return counts
}

// combine is lookupAll's answer from the answers to the queries of types.
// It is a function of its own so that its locals are not on the stack
// while the probe waits for the answers.
//
//go:noinline
func combine(ctx context.Context, name string, types []uint16, msgs []*dns.Msg, qerrs []error, counts []spyder.ResolverCounts) *Answer {
	a := &Answer{}
	fqdn := dns.Fqdn(name)
	seenAddr := make(map[netip.Addr]bool)
	var t dnsTally
	for i, qtype := range types {
		msg := msgs[i]
		if !t.note(qtype, msg, qerrs[i]) {
			continue
		}
		a.read(msg, fqdn, seenAddr)
		if qtype == dns.TypeNS && len(a.NS) == 0 {
			a.readDelegation(msg, fqdn)
		}
	}
	// Sorting the addresses A before AAAA keeps the dial order stable
	// whichever answer came back first.
	sortAddrs(a.Addrs)
	status, detail := t.status(len(a.Addrs))
	if status == spyder.StatusNXDomain {
		*a = Answer{}
	}
	if ctx.Err() != nil && status != spyder.StatusOK && status != spyder.StatusNXDomain {
		status = spyder.StatusTimeout
	}
	a.Status, a.Detail, a.Resolvers = status, detail, counts
	return a
}

// dnsTally counts how the queries of one lookup ended, for its status.
type dnsTally struct {
	answered int      // queries the server answered, whatever the rcode
	nx       int      // answered NXDOMAIN with an empty answer section
	errs     []string // "TYPE: reason" for each failed or SERVFAIL-like query
	timedOut bool     // a query got no answer in time
	servfail bool     // an answer had an rcode other than success or NXDOMAIN
}

// note counts one query of type qtype, which ended with msg or err, and
// reports whether msg has records to read: a success, or an NXDOMAIN that
// still carries answers (a CNAME chain ending at a missing name).
func (t *dnsTally) note(qtype uint16, msg *dns.Msg, err error) bool {
	if err != nil {
		t.errs = append(t.errs, dns.TypeToString[qtype]+": "+err.Error())
		if isTimeout(err) {
			t.timedOut = true
		}
		return false
	}
	t.answered++
	switch msg.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		if len(msg.Answer) == 0 {
			t.nx++
			return false
		}
	default:
		t.servfail = true
		t.errs = append(t.errs, dns.TypeToString[qtype]+": "+dns.RcodeToString[msg.Rcode])
		return false
	}
	return true
}

// status is the lookup's status and detail: "nxdomain" when every answer
// said so, "timeout" or "error" when none came, "servfail" when failures
// left no address, "partial" when some queries failed, else "ok". The
// detail lists the failures.
func (t *dnsTally) status(addrs int) (string, string) {
	switch {
	case t.answered > 0 && t.nx == t.answered:
		return spyder.StatusNXDomain, ""
	case t.answered == 0 && t.timedOut:
		return spyder.StatusTimeout, strings.Join(t.errs, "; ")
	case t.answered == 0:
		return spyder.StatusError, strings.Join(t.errs, "; ")
	case len(t.errs) > 0 && t.servfail && addrs == 0:
		return spyder.StatusServFail, strings.Join(t.errs, "; ")
	case len(t.errs) > 0:
		return spyder.StatusPartial, strings.Join(t.errs, "; ")
	}
	return spyder.StatusOK, ""
}

// read adds the records of msg's answer section to a: every distinct
// address (seenAddr holds those already added), and the CNAME (the first
// only), NS, MX and TXT records whose owner is fqdn. Records owned by an
// alias's target answer for the target, not for the host.
func (a *Answer) read(msg *dns.Msg, fqdn string, seenAddr map[netip.Addr]bool) {
	for _, rr := range msg.Answer {
		owned := strings.EqualFold(rr.Header().Name, fqdn)
		if ip, ok := rrAddr(rr); ok && !seenAddr[ip] {
			seenAddr[ip] = true
			a.Addrs = append(a.Addrs, ip)
		}
		switch rr := rr.(type) {
		case *dns.CNAME:
			if owned && a.CNAME == "" {
				a.CNAME, _ = host.Parse(rr.Target)
			}
		case *dns.NS:
			if owned {
				a.NS = appendName(a.NS, rr.Ns)
			}
		case *dns.MX:
			if owned && rr.Mx != "." {
				a.MX = appendName(a.MX, rr.Mx)
			}
		case *dns.TXT:
			if owned {
				a.TXT = append(a.TXT, strings.Join(rr.Txt, ""))
			}
		}
	}
}

// readDelegation adds the name servers of fqdn listed in msg's authority
// section: a delegation answered by a parent zone lists the host's own
// name servers there rather than in the answer.
func (a *Answer) readDelegation(msg *dns.Msg, fqdn string) {
	for _, rr := range msg.Ns {
		if ns, ok := rr.(*dns.NS); ok && strings.EqualFold(ns.Hdr.Name, fqdn) {
			a.NS = appendName(a.NS, ns.Ns)
		}
	}
}

// LookupAddrs resolves host's A and AAAA records, for a redirect target,
// IPv4 first. With no address, it returns the error of a query that
// failed, if any; one that timed out wraps [os.ErrDeadlineExceeded].
func (r *Client) LookupAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	msgs, errs, _ := r.exchange(ctx, host, lookupTypes[:2])
	var addrs []netip.Addr
	var err error
	for i, m := range msgs {
		if m == nil {
			err = errs[i]
			continue
		}
		addrs = append(addrs, answerAddrs(m)...)
	}
	if len(addrs) == 0 && err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	sortAddrs(addrs)
	return addrs, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// appendName appends the name s of a DNS record to list, as a [host.Name],
// unless list holds it already or it is not a host name: a name enters
// spyder from a DNS answer here, so it is parsed here.
func appendName(list []host.Name, s string) []host.Name {
	h, err := host.Parse(s)
	if err != nil || slices.Contains(list, h) {
		return list
	}
	return append(list, h)
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
