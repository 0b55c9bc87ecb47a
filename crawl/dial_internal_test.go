//go:build unix

package crawl

import (
	"net"
	"syscall"
	"testing"
)

// TestDefaultDial_NoKeepAlive: the connections of the default dialer have
// TCP keep-alive off (SO_KEEPALIVE 0), sparing the system calls that set
// it up; a plain net.Dialer's have it on, so the check can tell.
func TestDefaultDial_NoKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cfg, err := withDefaults(Config{Resolver: "127.0.0.1:53"})
	if err != nil {
		t.Fatal(err)
	}
	var plain net.Dialer
	for _, tt := range []struct {
		name string
		dial func() (net.Conn, error)
		want int
	}{
		{"default", func() (net.Conn, error) { return cfg.Dial(t.Context(), "tcp", ln.Addr().String()) }, 0},
		{"net.Dialer", func() (net.Conn, error) { return plain.DialContext(t.Context(), "tcp", ln.Addr().String()) }, 1},
	} {
		c, err := tt.dial()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var on int
		var serr error
		raw.Control(func(fd uintptr) { on, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE) })
		c.Close()
		if serr != nil {
			t.Fatal(serr)
		}
		if on != tt.want {
			t.Errorf("%s: SO_KEEPALIVE = %d, want %d", tt.name, on, tt.want)
		}
	}
}
