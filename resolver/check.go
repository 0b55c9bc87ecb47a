package resolver

import (
	"context"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// Check tells whether the resolvers, and the network to them, work,
// with the lookups' own timeout and retries. Given known, a name that
// resolved earlier in the crawl, it asks about it again and returns nil
// when the resolver answers the question (an address, no address, or no
// such name); an error when it does not answer or answers only that it
// cannot (SERVFAIL, REFUSED). Without one it asks about "localhost", which
// every resolver answers itself, and returns nil on any answer at all. The
// error names the resolver.
func (r *Client) Check(ctx context.Context, known host.Name) error {
	q := string(known)
	if q == "" {
		q = "localhost"
	}
	msgs, errs, counts := r.exchange(ctx, q, []uint16{dns.TypeA})
	switch {
	case errs[0] != nil:
		return fmt.Errorf("resolver %s does not answer (asked for %s: %v)", askedNames(counts), q, errs[0])
	case known != "" && msgs[0].Rcode != dns.RcodeSuccess && msgs[0].Rcode != dns.RcodeNameError:
		return fmt.Errorf("resolver %s cannot resolve %s, which resolved earlier in the run (%s)", askedNames(counts), q, dns.RcodeToString[msgs[0].Rcode])
	}
	return nil
}

// askedNames lists the resolvers a lookup asked, for an error message.
func askedNames(counts []spyder.ResolverCounts) string {
	names := make([]string, len(counts))
	for i, rc := range counts {
		names[i] = rc.Server
	}
	return strings.Join(names, ", ")
}
