package crawl

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// awaitAsync runs awaitReadable(c) and reports when it returns.
func awaitAsync(c net.Conn) <-chan struct{} {
	done := make(chan struct{})
	go func() { awaitReadable(c); close(done) }()
	return done
}

// TestAwaitReadable_Data: the wait lasts until a byte comes, and leaves
// the byte to be read; a byte read already (its readiness left over)
// does not end the next wait.
func TestAwaitReadable_Data(t *testing.T) {
	client, server := tcpPair(t)
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, msg := range []string{"a", "b"} {
		done := awaitAsync(client)
		select {
		case <-done:
			t.Fatalf("wait for %q returned before any byte was sent", msg)
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := io.WriteString(server, msg); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("wait did not return when %q came", msg)
		}
		b := make([]byte, 1)
		if _, err := io.ReadFull(client, b); err != nil || string(b) != msg {
			t.Fatalf("read %q, %v after the wait; want %q", b, err, msg)
		}
	}
}

// TestAwaitReadable_Ends: the wait ends at the read deadline, at a
// deadline moved into the past while it waits (what cancelling a probe
// does), when the connection is closed, and when the peer closes it.
func TestAwaitReadable_Ends(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(client, server net.Conn)
		end   func(client, server net.Conn)
	}{
		{"deadline", func(c, _ net.Conn) { c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) }, func(net.Conn, net.Conn) {}},
		{"cancelled", func(net.Conn, net.Conn) {}, func(c, _ net.Conn) { c.SetDeadline(time.Unix(1, 0)) }},
		{"closed", func(net.Conn, net.Conn) {}, func(c, _ net.Conn) { c.Close() }},
		{"peer closed", func(net.Conn, net.Conn) {}, func(_, s net.Conn) { s.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, server := tcpPair(t)
			tt.setup(client, server)
			done := awaitAsync(client)
			time.Sleep(50 * time.Millisecond)
			tt.end(client, server)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("wait did not return")
			}
		})
	}
}

// TestAwaitReadable_NotASocket: a connection that is not a socket is not
// waited on; its read waits instead.
func TestAwaitReadable_NotASocket(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	select {
	case <-awaitAsync(client):
	case <-time.After(5 * time.Second):
		t.Fatal("wait on a pipe did not return at once")
	}
}

// answerOnce is a TLS server that answers the first request on a
// connection with wire, in one record, after delay, then reads and never
// answers again.
func answerOnce(t *testing.T, delay time.Duration, wire string) *tlsServer {
	return answerWhen(t, func() { time.Sleep(delay) }, wire)
}

// answerWhen is answerOnce answering once wait returns.
func answerWhen(t *testing.T, wait func(), wire string) *tlsServer {
	return startTLSServer(t, &tls.Config{DynamicRecordSizingDisabled: true}, func(tc *tls.Conn) {
		buf := make([]byte, 4096)
		if _, err := tc.Read(buf); err != nil {
			return
		}
		wait()
		if _, err := io.WriteString(tc, wire); err != nil {
			return
		}
		for {
			if _, err := tc.Read(buf); err != nil {
				return
			}
		}
	})
}

// httpsConn connects to srv as a probe does, within ctx.
func httpsConn(ctx context.Context, t *testing.T, srv *tlsServer, requestTimeout time.Duration) (*visit, *httpConn) {
	t.Helper()
	p := testProbe()
	p.c.cfg.ConnectTimeout = 5 * time.Second
	p.c.cfg.RequestTimeout = requestTimeout
	p.c.reqHeaders = requestHeaders("spyder-test")
	p.c.robots = newRobotsCache(robotsCacheSize, robotsCacheTTL)
	ap := netip.MustParseAddrPort(srv.ln.Addr().String())
	hc, err := p.connect(ctx, "https", "tls.example", strconv.Itoa(int(ap.Port())), []netip.Addr{ap.Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.close)
	return p, hc
}

// get requests path on hc and reads the response whole, in reads as
// large as the body allows (as done's drain does), so that the response
// reader takes no more of the connection than the header's bytes.
func get(ctx context.Context, p *visit, hc *httpConn, path string) (*http.Response, string, error) {
	resp, err := p.do(ctx, hc, path)
	if err != nil {
		return nil, "", err
	}
	var b bytes.Buffer
	b.Grow(64 << 10)
	_, err = b.ReadFrom(resp.Body)
	hc.done(resp)
	return resp, b.String(), err
}

// TestReadFirst_WaitsOnTheSocket: while a probe waits for a response its
// goroutine is parked in awaitReadable, not in the TLS read, and the
// response is read whole when it comes. The server answers only once the
// probe's goroutine was seen parked in one or the other.
func TestReadFirst_WaitsOnTheSocket(t *testing.T) {
	const body = "hello"
	release := make(chan struct{})
	srv := answerWhen(t, func() { <-release }, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"+body)
	ctx := t.Context()
	p, hc := httpsConn(ctx, t, srv, 10*time.Second)
	if hc.fc == nil {
		t.Fatal("https connection without its finishedConn")
	}
	type result struct {
		resp *http.Response
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, b, err := get(ctx, p, hc, "/")
		got <- result{resp, b, err}
	}()
	var waiting string
	for deadline := time.Now().Add(5 * time.Second); waiting == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "crawl.(*visit).do") &&
				(strings.Contains(g, "crawl.awaitReadable") || strings.Contains(g, "crypto/tls.(*Conn).Read")) {
				waiting = g
			}
		}
	}
	close(release)
	if r := <-got; r.err != nil || r.resp.StatusCode != 200 || r.body != body {
		t.Fatalf("response %v, body %q, %v; want 200 and %q", r.resp, r.body, r.err, body)
	}
	if !strings.Contains(waiting, "crawl.awaitReadable") || strings.Contains(waiting, "crypto/tls.(*Conn).Read") {
		t.Errorf("the probe waited for its response in:\n%s", waiting)
	}
}

// TestReadFirst_HeldByTLS: a response the TLS connection holds already
// (sent in the record of the one before, after a body the response reader
// left to the TLS connection) is read at once, not after a wait on a
// socket that has nothing more to say until the request times out.
func TestReadFirst_HeldByTLS(t *testing.T) {
	long := strings.Repeat("x", 4*readerSize)
	one := "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(long)) + "\r\n\r\n" + long
	two := "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\ntwo"
	srv := answerOnce(t, 0, one+two)
	ctx := t.Context()
	p, hc := httpsConn(ctx, t, srv, 10*time.Second)
	if _, got, err := get(ctx, p, hc, "/one"); err != nil || got != long {
		t.Fatalf("first response: %d bytes, %v", len(got), err)
	}
	if hc.br != nil {
		t.Fatal("the response reader holds the second response: the test needs it held by the TLS connection")
	}
	start := time.Now()
	resp, got, err := get(ctx, p, hc, "/two")
	if err != nil || resp.StatusCode != 404 || got != "two" {
		t.Fatalf("second response %v, body %q, %v; want 404 and two", resp, got, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a response the TLS connection held took %v to read", d)
	}
}

// TestReadFirst_Ends: a probe waiting for a response stops at the
// request's deadline and when its context is cancelled, with a timeout.
func TestReadFirst_Ends(t *testing.T) {
	srv := answerOnce(t, time.Hour, "")
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		cancel  time.Duration
	}{
		{"deadline", 300 * time.Millisecond, time.Hour},
		{"cancelled", time.Hour, 300 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			p, hc := httpsConn(ctx, t, srv, tt.timeout)
			time.AfterFunc(tt.cancel, cancel)
			done := make(chan error, 1)
			go func() { _, err := p.do(ctx, hc, "/"); done <- err }()
			select {
			case err := <-done:
				if status, _ := classify(ctx, err, spyder.StatusError); status != spyder.StatusTimeout {
					t.Errorf("error %v (%s), want a timeout", err, status)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the wait for the response did not end")
			}
		})
	}
}
