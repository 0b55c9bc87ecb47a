//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package crawl

import "net"

// awaitReadable does not wait where the socket cannot be peeked at: the
// read that follows it waits.
func awaitReadable(net.Conn) {}
