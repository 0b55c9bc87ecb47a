package resolver

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/spyder-crawler/spyder/host"
)

// portServer is a real DNS server on 127.0.0.1 that answers every A
// question with 192.0.2.1 and records the source ports queries came from,
// and when.
type portServer struct {
	addr  string
	mu    sync.Mutex
	ports map[int]int // source port → queries
	times []time.Time // when each query came
}

func startPortServer(t *testing.T) *portServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ps := &portServer{addr: pc.LocalAddr().String(), ports: map[int]int{}}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		ps.mu.Lock()
		ps.ports[w.RemoteAddr().(*net.UDPAddr).Port]++
		ps.times = append(ps.times, time.Now())
		ps.mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(q)
		if q.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR(q.Question[0].Name + " 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return ps
}

func (ps *portServer) portCount() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.ports)
}

// lookups runs n lookups of every lookup type, conc at a time, and fails
// the test unless each finds the address.
func lookups(t *testing.T, r *Client, n, conc int) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			a := r.LookupAll(context.Background(), host.Name("h"+strings.Repeat("x", i%7)+".example"))
			if a.Status != "ok" || len(a.Addrs) != 1 {
				t.Errorf("lookup %d: status %q, addrs %v (%s)", i, a.Status, a.Addrs, a.Detail)
			}
		}()
	}
	wg.Wait()
}

// TestSocketPool_Shared: lookups share a few sockets (source ports) per
// resolver rather than one each, and a socket is retired after its share
// of queries, so the ports change as a crawl goes on.
func TestSocketPool_Shared(t *testing.T) {
	ps := startPortServer(t)
	r := mustNew(t, Config{Servers: ps.addr, Timeout: 2 * time.Second, Retries: 2})
	lookups(t, r, 300, 32)
	if n := ps.portCount(); n > socketsPerServer {
		t.Fatalf("300 lookups came from %d source ports, want at most %d", n, socketsPerServer)
	}

	r.pools[0].maxQueries = 60 // ten lookups a socket
	before := ps.portCount()
	lookups(t, r, 300, 32)
	if n := ps.portCount() - before; n < 300*6/60-socketsPerServer {
		t.Errorf("300 lookups at 60 queries a socket brought %d new source ports, want about 30", n)
	}
}

// TestSocketPool_Idle: once no lookup uses them, the sockets close, so a
// crawler that stops leaves no socket or reader behind.
func TestSocketPool_Idle(t *testing.T) {
	ps := startPortServer(t)
	r := mustNew(t, Config{Servers: ps.addr, Timeout: 2 * time.Second, Retries: 2})
	lookups(t, r, 20, 4)
	deadline := time.Now().Add(socketIdle + 2*time.Second)
	for {
		open := 0
		for _, s := range r.pools[0].slots {
			if s != nil {
				s.mu.Lock()
				if !s.closed {
					open++
				}
				s.mu.Unlock()
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets still open %v after the last lookup", open, socketIdle+2*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lookups(t, r, 5, 1) // and a later lookup opens new ones
}

// TestSocketPool_Refused: a closed port fails the lookup's queries with the
// network's error at once, not after the timeout.
func TestSocketPool_Refused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	r := mustNew(t, Config{Servers: addr, Timeout: 5 * time.Second, Retries: -1})
	start := time.Now()
	msgs, errs, counts := r.exchange(context.Background(), "a.example", lookupTypes)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("lookup to a closed port took %v, want well under the 5 s timeout", d)
	}
	for i := range msgs {
		if msgs[i] != nil || errs[i] == nil || !strings.Contains(errs[i].Error(), "refused") {
			t.Errorf("question %d: answer %v, error %v; want connection refused", i, msgs[i], errs[i])
		}
	}
	if len(counts) != 1 || counts[0].Errors != uint64(len(lookupTypes)) {
		t.Errorf("counts = %+v, want %d errors", counts, len(lookupTypes))
	}
}
