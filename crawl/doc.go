// Package crawl visits hosts and turns what it finds into the nodes and
// edges of a host graph (the types of package spyder): domain, IP and
// certificate nodes, joined by RESOLVES_TO (A/AAAA), USES_NS, ALIAS_OF
// (CNAME, never to the host itself), USES_MX, USES_CERT (the leaf
// certificate's SPKI), LINKS_TO (a page's links to hosts of another
// registrable domain), REDIRECTS_TO (a redirect hop between registrable
// domains) and, with Config.ASN, IN_AS (IP → "AS<n>") edges.
//
// # Visiting
//
// A [Crawler] visits one host a call, from any number of goroutines:
// [Crawler.Visit] looks the host up with package resolver, applies the
// policy (excluded TLDs, the private-address guard on every address it
// dials), then makes one TLS connection: the certificate is recorded from
// it whether or not it verifies, and robots.txt and the page are fetched
// over it (following redirects, each hop through the [Limiter] and the
// host's Crawl-delay). robots.txt is read by package robots. The final
// page's links become LINKS_TO edges from the visited host (not the host a
// redirect ended on) to hosts of another registrable domain.
//
// Every step's outcome is in the [spyder.Result]; nothing is retried inside
// a visit beyond DNS, and a visit never outlasts Config.HostTimeout. The
// results of many visits become lines of output in package sink, which
// leaves out the run's repeated nodes and edges.
package crawl
