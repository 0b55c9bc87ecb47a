package crawltest

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/miekg/dns"
)

const ttl = 300

// startDNS serves the plan's names on one loopback port, UDP and TCP.
func (w *World) startDNS() (stop func(), err error) {
	var pc net.PacketConn
	var ln net.Listener
	for try := 0; ; try++ {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen udp: %w", err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
		if try == 20 {
			return nil, fmt.Errorf("listen tcp: %w", err)
		}
	}
	// Hundreds of workers each send six queries at once: a default-sized
	// socket buffer would drop some of them, which is not what is tested.
	if u, ok := pc.(*net.UDPConn); ok {
		u.SetReadBuffer(4 << 20)
		u.SetWriteBuffer(4 << 20)
	}
	w.Resolver = pc.LocalAddr().String()
	h := dns.HandlerFunc(w.serveDNS)
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
			return nil, fmt.Errorf("serve: %w", err)
		}
	}
	return func() {
		udp.Shutdown()
		tcp.Shutdown()
	}, nil
}

// serveDNS answers authoritatively from the plan, after the configured
// latency (slept in the request's own goroutine).
func (w *World) serveDNS(rw dns.ResponseWriter, req *dns.Msg) {
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
	m := w.answer(req)
	if _, udp := rw.LocalAddr().(*net.UDPAddr); udp {
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
