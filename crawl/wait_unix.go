//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package crawl

import (
	"net"
	"syscall"
)

// awaitReadable parks the calling goroutine until c has a byte to read,
// its end of stream or an error, or until its read deadline passes or it
// is closed, whichever comes first; what ended the wait is left for the
// next read to find. It waits in the runtime's network poller a few
// frames above c's read, not under a TLS read's dozen. A connection that
// is not a socket (syscall.Conn) is not waited on: the read that follows
// waits.
func awaitReadable(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(readable)
}

// readable reports whether the socket fd has something to read, peeking
// at its first byte without taking it. The poller's readiness flag may be
// left over from bytes read already, so only the socket's answer ends the
// wait: on EAGAIN RawConn.Read waits for the next readiness and asks
// again.
func readable(fd uintptr) bool {
	var b [1]byte
	for {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		if err != syscall.EINTR {
			return err != syscall.EAGAIN
		}
	}
}
