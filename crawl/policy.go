package crawl

import (
	"errors"
	"net/netip"
	"strings"

	"github.com/spyder-crawler/spyder/host"
)

// excluded reports whether host's top-level domain is excluded.
func (c *Crawler) excluded(h host.Name) bool {
	tld := h[strings.LastIndexByte(string(h), '.')+1:]
	return c.exclude[string(tld)]
}

// dialable returns the addresses the crawler may connect to: the public
// ones, or all of them with AllowPrivate.
func (c *Crawler) dialable(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if c.cfg.AllowPrivate || IsPublic(a) {
			out = append(out, a)
		}
	}
	return out
}

// cgnat is the shared address space of RFC 6598, used behind carrier NAT.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// IsPublic reports whether a may be connected to without AllowPrivate: it
// is none of loopback, private (RFC 1918, unique-local fc00::/7), carrier NAT
// (100.64.0.0/10), link-local (including the cloud metadata address
// 169.254.169.254), unspecified, multicast, "this network" (0.0.0.0/8) or
// broadcast. Documentation ranges count as public.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case !a.IsValid(), a.IsLoopback(), a.IsPrivate(), a.IsLinkLocalUnicast(),
		a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast(),
		a.IsUnspecified(), cgnat.Contains(a):
		return false
	case a.Is4():
		b := a.As4()
		return b[0] != 0 && a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
	}
	return true
}

// errNoAddress reports that a redirect target has no address to dial.
var errNoAddress = errors.New("crawl: no public address")
