package crawl_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// A world in another process, so that a benchmark measures the crawler's
// own memory and CPU: the child runs the world's servers and reports where
// each world address leads (World.Routes); the parent dials as World.Dial
// would, waiting the world's connect latency itself and connecting
// straight to the loopback server the address leads to.

// worldInfo is what the child reports on its first line of stdout.
type worldInfo struct {
	Resolver string
	Routes   map[string]string // World.Routes
	Latency  time.Duration     // the world's HTTPLatency, which a connect takes
	Seeds    []string
	CA       []byte // the world's CA certificate, DER
}

// TestWorldProcess is the child: it runs only with SPYDER_WORLD_PROCESS set
// (to the number of hosts) and serves until its stdin closes.
func TestWorldProcess(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("SPYDER_WORLD_PROCESS"))
	if err != nil {
		t.Skip("helper process of BenchmarkCrawl (SPYDER_BENCH_WORLD=process)")
	}
	raiseFileLimit()
	opts := benchWorld(t, n)
	w := crawltest.Start(t, opts)
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(os.Stdout).Encode(worldInfo{Resolver: w.Resolver, Routes: w.Routes(), Latency: opts.HTTPLatency,
		Seeds: w.Seeds, CA: w.CA.Raw})
	io.Copy(io.Discard, os.Stdin)
}

// raiseFileLimit lifts the limit on open files as far as the process may:
// every probe in flight holds a descriptor here (the world's side of its
// connection), and connections closed by one side linger a while, so
// 4,096 workers need more than the 20,000 a machine may allow by default.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return
	}
	want := syscall.Rlimit{Cur: max(lim.Max, 1<<17), Max: max(lim.Max, 1<<17)}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		lim.Cur = lim.Max // not privileged: up to the hard limit
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
}

// worldProcess is a world running in a child process.
type worldProcess struct {
	info worldInfo
	cmd  *exec.Cmd
}

// startWorldProcess runs TestWorldProcess of this test binary with hosts
// hosts and stops it at cleanup.
func startWorldProcess(tb testing.TB, hosts int) *worldProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorldProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SPYDER_WORLD_PROCESS="+strconv.Itoa(hosts))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	p := &worldProcess{cmd: cmd}
	if err := json.NewDecoder(stdout).Decode(&p.info); err != nil {
		tb.Fatalf("world process: %v", err)
	}
	go io.Copy(io.Discard, stdout)
	return p
}

// dial connects to addr in the child's world as World.Dial does: an
// address outside the world is refused at once; any other takes the
// world's latency, then is refused or connects to the server it leads to,
// with TCP keep-alive off as the crawler's default dialer has it.
func (p *worldProcess) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	target, known := p.route(addr)
	if !known {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%w: %s", crawltest.ErrUnreachable, addr)}
	}
	t := time.NewTimer(p.info.Latency)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
	case <-t.C:
	}
	if target == "" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	d := net.Dialer{KeepAlive: -1}
	return d.DialContext(ctx, "tcp", target)
}

// route looks addr up in the child's routes, its IP address unmapped as
// World.Dial reads it.
func (p *worldProcess) route(addr string) (target string, known bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", false
	}
	target, known = p.info.Routes[net.JoinHostPort(ip.Unmap().String(), port)]
	return target, known
}

// roots is a pool of the child's CA, so that certificates verify as they
// do in a real crawl.
func (p *worldProcess) roots(tb testing.TB) *x509.CertPool {
	ca, err := x509.ParseCertificate(p.info.CA)
	if err != nil {
		tb.Fatalf("world process: CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// TestWorldProcess_DialMatchesWorld checks that the parent's dial of a
// world in another process answers as World.Dial does for every world
// address and for addresses outside the world: refused at once, refused
// after the latency, or connected to the same loopback server.
func TestWorldProcess_DialMatchesWorld(t *testing.T) {
	w := crawltest.Start(t, crawltest.Options{Hosts: 300, Seed: 7, SlowFraction: 0.2, Hostile: true,
		HTTPLatency: time.Millisecond})
	p := &worldProcess{info: worldInfo{Routes: w.Routes(), Latency: time.Millisecond}}
	addrs := []string{"10.0.0.1:443", "127.0.0.1:443", "[2001:db8::99]:443", "not an address"}
	targets := map[string]int{} // addresses checked by where they lead: 20 of each
	for addr, target := range p.info.Routes {
		if targets[target]++; targets[target] > 20 {
			continue
		}
		addrs = append(addrs, addr)
		if host, port, _ := net.SplitHostPort(addr); netip.MustParseAddr(host).Is4() && port == "443" {
			addrs = append(addrs, net.JoinHostPort(host, "22"), net.JoinHostPort("::ffff:"+host, "443"))
		}
	}
	if len(targets) != 5 { // refused, hanging, trickling, TLS and plain HTTP
		t.Fatalf("routes lead to %d kinds of address, want 5: %v", len(targets), targets)
	}
	ctx := context.Background()
	for _, addr := range addrs {
		got, gotErr := p.dial(ctx, "tcp", addr)
		want, wantErr := w.Dial(ctx, "tcp", addr)
		switch {
		case (gotErr == nil) != (wantErr == nil):
			t.Errorf("dial(%s) = %v, World.Dial %v", addr, gotErr, wantErr)
		case gotErr != nil:
			if errors.Is(gotErr, syscall.ECONNREFUSED) != errors.Is(wantErr, syscall.ECONNREFUSED) ||
				errors.Is(gotErr, crawltest.ErrUnreachable) != errors.Is(wantErr, crawltest.ErrUnreachable) {
				t.Errorf("dial(%s) = %v, World.Dial %v", addr, gotErr, wantErr)
			}
		case got.RemoteAddr().String() != want.RemoteAddr().String():
			t.Errorf("dial(%s) reached %s, World.Dial %s", addr, got.RemoteAddr(), want.RemoteAddr())
		}
		for _, c := range []net.Conn{got, want} {
			if c != nil {
				c.Close()
			}
		}
	}
}
