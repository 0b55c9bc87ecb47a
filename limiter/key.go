package limiter

import (
	"fmt"
	"net/netip"

	"github.com/spyder-crawler/spyder/host"
)

// KeyFunc maps a request's host (a host name in canonical form, see
// [host.Name], or an IP literal) and the address it resolved to (the zero
// [netip.Addr] when unknown) to the key a [Limiter] rates it under.
type KeyFunc func(host string, ip netip.Addr) string

// KeyHost keys by host: each host name has its own rate. It is the default.
func KeyHost(h string, _ netip.Addr) string { return h }

// KeyApex keys by registrable domain (eTLD+1 by the public suffix list), so
// a.example.co.uk and b.example.co.uk share example.co.uk's rate. A host that
// has no registrable domain (an IP literal, a public suffix, a single label
// such as localhost) is its own key.
func KeyApex(h string, _ netip.Addr) string {
	if _, err := netip.ParseAddr(h); err == nil {
		return h
	}
	return string(host.Name(h).Apex())
}

// KeyIP keys by the address the host resolved to, so every domain served by
// one machine shares its rate. When ip is not known it falls back to the
// host, which keeps an IP-literal host and its address under the same key.
func KeyIP(h string, ip netip.Addr) string {
	if !ip.IsValid() {
		return h
	}
	return ip.Unmap().String()
}

// ParseKeyFunc returns the KeyFunc named "host", "apex" or "ip" (the names a
// command-line flag accepts); "" means "host".
func ParseKeyFunc(name string) (KeyFunc, error) {
	switch name {
	case "", "host":
		return KeyHost, nil
	case "apex":
		return KeyApex, nil
	case "ip":
		return KeyIP, nil
	}
	return nil, fmt.Errorf("limiter: unknown key %q (want host, apex or ip)", name)
}
