package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spyder-crawler/spyder/internal/errtext"
)

// The hidden flags --ca-file and --dial-proxy let end-to-end tests crawl a
// simulated internet: its certificates' root, and a proxy that routes
// every connection to it.

// rootCAs returns the system roots plus the PEM certificates of path.
func rootCAs(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-file %s: %w", path, errtext.Path(err))
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// connectDialer dials every address through an HTTP CONNECT proxy.
func connectDialer(proxy string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", proxy)
		if err != nil {
			return nil, fmt.Errorf("dial proxy %s: %w", proxy, err)
		}
		stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("proxy connect %s: %w", addr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			conn.Close()
			return nil, fmt.Errorf("connect %s: %s", addr, resp.Status)
		}
		if !stop() {
			conn.Close()
			return nil, ctx.Err()
		}
		conn.SetDeadline(time.Time{})
		if br.Buffered() > 0 {
			return &bufConn{Conn: conn, r: br}, nil
		}
		return conn, nil
	}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
