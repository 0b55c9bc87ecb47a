package main

// A userspace TCP proxy for the chaos soak. The kernel here has no
// sch_netem qdisc (`tc qdisc add … netem` fails: "Specified qdisc kind is
// unknown"), so packet loss and latency cannot be set on a network
// namespace's interface; instead the probes reach Redis and the ingest
// endpoint through this proxy, which adds latency to every chunk it relays
// and resets connections at random while it is "rough". A reset stands for
// a run of lost packets that TCP gave up on: the client sees its
// connection fail mid-request, often after the server acted on it.

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// chaosProxy relays TCP connections from its listener to target.
type chaosProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	rough   bool          // add latency and reset connections at random
	latency time.Duration // the most added to a chunk while rough
	resetP  float64       // chance a relayed chunk resets its connection while rough
	conns   map[net.Conn]bool
	resets  int
	rnd     *rand.Rand
	closed  bool
	wg      sync.WaitGroup
}

// startChaosProxy listens on a free loopback port and relays to target
// until the test ends.
func startChaosProxy(t *testing.T, target string, seed uint64) *chaosProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("chaos proxy: %v", err)
	}
	p := &chaosProxy{ln: ln, target: target, conns: map[net.Conn]bool{}, rnd: rand.New(rand.NewPCG(seed, 0x9e3779b9))}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is where the probes connect.
func (p *chaosProxy) Addr() string { return p.ln.Addr().String() }

// setRough turns the faults on (up to latency per chunk, each chunk
// resetting its connection with chance resetP) or off.
func (p *chaosProxy) setRough(on bool, latency time.Duration, resetP float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rough, p.latency, p.resetP = on, latency, resetP
}

// resetCount returns how many connections the proxy reset on purpose.
func (p *chaosProxy) resetCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resets
}

func (p *chaosProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *chaosProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *chaosProxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *chaosProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.relay(c)
	}
}

// relay connects c to the target (closing c at once when the target does
// not answer, as a dead server's refusal would) and copies both ways.
func (p *chaosProxy) relay(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c) || !p.track(up) {
		c.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.copy(up, c); done <- struct{}{} }()
	go func() { p.copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
	p.forget(c)
	p.forget(up)
}

// copy relays src to dst chunk by chunk; while rough, each chunk waits a
// random latency first and may reset both connections instead (SO_LINGER
// 0, so the peer sees a reset, not an orderly close).
func (p *chaosProxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			delay, reset := p.fault()
			if delay > 0 {
				time.Sleep(delay)
			}
			if reset {
				for _, c := range []net.Conn{dst, src} {
					if tc, ok := c.(*net.TCPConn); ok {
						tc.SetLinger(0)
					}
					c.Close()
				}
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			return
		}
	}
}

// fault draws the delay and reset of one chunk.
func (p *chaosProxy) fault() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.rough {
		return 0, false
	}
	var d time.Duration
	if p.latency > 0 {
		d = time.Duration(p.rnd.Int64N(int64(p.latency)))
	}
	if p.rnd.Float64() < p.resetP {
		p.resets++
		return d, true
	}
	return d, false
}
