package crawl_test

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
)

// A world in another process, so that a benchmark measures the crawler's
// own memory and CPU: the child runs the world and a forwarder; the parent
// dials the forwarder, names the world address it wants ("ip:port\n") and
// gets 'y' and a spliced connection, or 'n' when the world refuses it.

// worldInfo is what the child reports on its first line of stdout.
type worldInfo struct {
	Resolver string
	Forward  string
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
	w := crawltest.Start(t, benchWorld(t, n))
	if err := w.Warm(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil { // out of descriptors, say: the next accept may do
				time.Sleep(10 * time.Millisecond)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				forward(w, c)
			}()
		}
	}()
	json.NewEncoder(os.Stdout).Encode(worldInfo{Resolver: w.Resolver, Forward: ln.Addr().String(), Seeds: w.Seeds, CA: w.CA.Raw})
	io.Copy(io.Discard, os.Stdin)
}

// raiseFileLimit lifts the limit on open files as far as the process may:
// every probe in flight holds three descriptors here (the forwarded
// connection, the world's side of it and its server's), and connections
// closed by one side linger a while, so 4,096 workers need more than the
// 20,000 a machine may allow by default.
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

func forward(w *crawltest.World, c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	addr, err := br.ReadString('\n')
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	up, err := w.Dial(ctx, "tcp", strings.TrimSpace(addr))
	cancel()
	if err != nil {
		c.Write([]byte("n"))
		return
	}
	defer up.Close()
	if _, err := c.Write([]byte("y")); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, br); up.Close(); done <- struct{}{} }()
	go func() { io.Copy(c, up); c.Close(); done <- struct{}{} }()
	<-done
	<-done
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

// dial connects to addr in the child's world through its forwarder, with
// TCP keep-alive off as the crawler's default dialer has it.
func (p *worldProcess) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{KeepAlive: -1}
	c, err := d.DialContext(ctx, "tcp", p.info.Forward)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	var ok [1]byte
	if _, err := io.WriteString(c, addr+"\n"); err == nil {
		_, err = io.ReadFull(c, ok[:])
	}
	c.SetDeadline(time.Time{})
	if err != nil || ok[0] != 'y' {
		c.Close()
		if err == nil {
			err = fmt.Errorf("world refused %s", addr)
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	return c, nil
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
