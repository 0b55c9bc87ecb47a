package crawl

import (
	"context"
	"fmt"

	"github.com/miekg/dns"

	"github.com/spyder-crawler/spyder/host"
)

// CheckResolver asks the resolver for the address of name, with the
// lookups' own timeout and retries, and returns nil when it answers the
// question (an address, no address, or no such name): proof that it and
// the network to it work. An error means it did not answer, or answered
// only that it could not (SERVFAIL, REFUSED); it names the resolver. Pass
// a name that resolved earlier in the crawl, or "" for the root zone.
func (c *Crawler) CheckResolver(ctx context.Context, name host.Name) error {
	q := string(name)
	if q == "" {
		q = "."
	}
	msgs, errs := c.resolver.exchange(ctx, q, []uint16{dns.TypeNS})
	switch {
	case errs[0] != nil:
		return fmt.Errorf("resolver %s does not answer (asked for %s: %v)", c.resolver.server, q, errs[0])
	case msgs[0].Rcode != dns.RcodeSuccess && msgs[0].Rcode != dns.RcodeNameError:
		return fmt.Errorf("resolver %s cannot resolve (asked for %s: %s)", c.resolver.server, q, dns.RcodeToString[msgs[0].Rcode])
	}
	return nil
}
