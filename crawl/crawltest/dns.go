package crawltest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

const ttl = 300

// DNSMode is how one of the world's DNS servers answers; a test switches
// it at any time with [DNSServer.SetMode].
type DNSMode int32

// DNS server modes.
const (
	DNSAnswer   DNSMode = iota // answer from the plan (the default)
	DNSSilent                  // read every query and never answer
	DNSServFail                // answer every query SERVFAIL
	DNSRefused                 // answer every query REFUSED
	DNSTruncate                // over UDP answer with the TC bit set and no records; over TCP in full
)

// DNSServer is one of the world's DNS servers: UDP and TCP on one loopback
// port, answering from the plan like every other. It is safe for
// concurrent use.
type DNSServer struct {
	Addr string // "127.0.0.1:port" or "[::1]:port"
	w    *World
	mode atomic.Int32
	udp  atomic.Int64
	tcp  atomic.Int64
}

// SetMode makes s answer as m from the next query on.
func (s *DNSServer) SetMode(m DNSMode) { s.mode.Store(int32(m)) }

// Queries returns how many queries s received over UDP and over TCP.
func (s *DNSServer) Queries() (udp, tcp int64) { return s.udp.Load(), s.tcp.Load() }

// StartResolver starts another DNS server of the world on ip ("127.0.0.1",
// or "::1" when the machine has IPv6 loopback), answering from the same
// plan, and stops it with the world.
func (w *World) StartResolver(tb testing.TB, ip string) *DNSServer {
	tb.Helper()
	s, stop, err := w.startDNS(ip)
	if err != nil {
		tb.Fatalf("crawltest: resolver on %s: %v", ip, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		stop()
		tb.Fatalf("crawltest: resolver started after the world stopped")
	}
	w.stops = append(w.stops, stop)
	return s
}

// startDNS serves the plan's names on one port of ip, UDP and TCP.
func (w *World) startDNS(ip string) (s *DNSServer, stop func(), err error) {
	var pc net.PacketConn
	var ln net.Listener
	for try := 0; ; try++ {
		pc, err = net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, nil, fmt.Errorf("listen udp: %w", err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
		if try == 20 {
			return nil, nil, fmt.Errorf("listen tcp: %w", err)
		}
	}
	// Hundreds of workers each send five queries at once: a default-sized
	// socket buffer would drop some of them, which is not what is tested.
	if u, ok := pc.(*net.UDPConn); ok {
		u.SetReadBuffer(4 << 20)
		u.SetWriteBuffer(4 << 20)
	}
	s = &DNSServer{Addr: pc.LocalAddr().String(), w: w}
	h := dns.HandlerFunc(s.serveDNS)
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: ln, Handler: h}
	for _, srv := range []*dns.Server{udp, tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		errc := make(chan error, 1)
		go func() { errc <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-errc:
			pc.Close()
			ln.Close()
			return nil, nil, fmt.Errorf("serve: %w", err)
		}
	}
	return s, func() {
		udp.Shutdown()
		tcp.Shutdown()
	}, nil
}

// serveDNS answers as s's mode says: from the plan authoritatively, after
// the configured latency (slept in the request's own goroutine), or not
// at all, or with an error code, or truncated.
func (s *DNSServer) serveDNS(rw dns.ResponseWriter, req *dns.Msg) {
	w := s.w
	_, udp := rw.LocalAddr().(*net.UDPAddr)
	if udp {
		s.udp.Add(1)
	} else {
		s.tcp.Add(1)
	}
	if !w.enter() {
		return
	}
	defer w.leave()
	if !w.sleep(context.Background(), w.opts.DNSLatency) {
		return
	}
	if len(req.Question) == 1 && w.plan.silent[normName(req.Question[0].Name)] {
		<-w.done // never answer
		return
	}
	var m *dns.Msg
	switch DNSMode(s.mode.Load()) {
	case DNSSilent:
		return
	case DNSServFail:
		m = new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
	case DNSRefused:
		m = new(dns.Msg).SetRcode(req, dns.RcodeRefused)
	case DNSTruncate:
		m = w.answer(req)
		if udp {
			m.Answer, m.Ns, m.Extra = nil, nil, nil
			m.Truncated = true
		}
	default:
		m = w.answer(req)
	}
	if udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > size {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	rw.WriteMsg(m)
}

func (w *World) answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.Compress = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m
	}
	q := req.Question[0]
	name := normName(q.Name)
	if w.plan.lame[name] && q.Qtype != dns.TypeCNAME {
		m.Rcode = dns.RcodeServerFailure
		return m
	}
	if w.plan.names[name] == nil {
		m.Rcode = dns.RcodeNameError
		m.Ns = append(m.Ns, soa(name))
		return m
	}
	// RFC 1034 §4.3.2: follow CNAMEs within the world, stop on a loop or
	// at a name the world does not hold (NOERROR with the chain so far).
	seen := map[string]bool{}
	for cur := name; ; {
		r := w.plan.names[cur]
		if r == nil || seen[cur] {
			break
		}
		seen[cur] = true
		hdr := dns.RR_Header{Name: dns.Fqdn(cur), Class: dns.ClassINET, Ttl: ttl}
		if r.cname != "" {
			hdr.Rrtype = dns.TypeCNAME
			m.Answer = append(m.Answer, &dns.CNAME{Hdr: hdr, Target: dns.Fqdn(r.cname)})
			if q.Qtype == dns.TypeCNAME {
				break
			}
			cur = r.cname
			continue
		}
		m.Answer = append(m.Answer, records(hdr, r, q.Qtype)...)
		break
	}
	if len(m.Answer) == 0 {
		m.Ns = append(m.Ns, soa(name))
	}
	return m
}

// records returns r's records of type t under hdr's owner.
func records(hdr dns.RR_Header, r *rrs, t uint16) []dns.RR {
	hdr.Rrtype = t
	var out []dns.RR
	switch t {
	case dns.TypeA:
		for _, a := range r.a {
			out = append(out, &dns.A{Hdr: hdr, A: net.IP(a.AsSlice())})
		}
	case dns.TypeAAAA:
		for _, a := range r.aaaa {
			out = append(out, &dns.AAAA{Hdr: hdr, AAAA: net.IP(a.AsSlice())})
		}
	case dns.TypeNS:
		for _, ns := range r.ns {
			out = append(out, &dns.NS{Hdr: hdr, Ns: dns.Fqdn(ns)})
		}
	case dns.TypeMX:
		for _, mx := range r.mx {
			out = append(out, &dns.MX{Hdr: hdr, Preference: mx.pref, Mx: dns.Fqdn(mx.host)})
		}
	case dns.TypeTXT:
		for _, txt := range r.txt {
			out = append(out, &dns.TXT{Hdr: hdr, Txt: txt})
		}
	}
	return out
}

// soa is the authority record of the registered domain holding name.
func soa(name string) dns.RR {
	zone := apexOf(name)
	if strings.Count(zone, ".") == 0 {
		zone = name
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: dns.Fqdn(zone), Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl},
		Ns:      "ns1.dnsprov0.net.",
		Mbox:    "hostmaster." + dns.Fqdn(zone),
		Serial:  2026010101,
		Refresh: 3600, Retry: 600, Expire: 86400, Minttl: ttl,
	}
}
