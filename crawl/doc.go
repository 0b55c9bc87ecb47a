// Package crawl turns hosts into the nodes and edges of a host graph:
// domain, IP and certificate nodes, joined by RESOLVES_TO
// (A/AAAA), USES_NS, ALIAS_OF (CNAME, never to the host itself), USES_MX,
// USES_CERT (the leaf certificate's SPKI), LINKS_TO (a page's links to
// hosts of another registrable domain), REDIRECTS_TO (a redirect hop
// between registrable domains) and, with Config.ASN, IN_AS (IP → "AS<n>")
// edges.
//
// # Probing
//
// A [Crawler] probes one host at a time per call, from any number of
// workers: [Crawler.Visit] (or [Crawler.Probe], for input not parsed
// yet) sends the host's DNS questions (A, AAAA, NS, MX, TXT; their answers
// carry a CNAME) at once to the next of the configured resolvers (asking
// another when one is silent or answers SERVFAIL or REFUSED, and setting
// aside for [ResolverCooldown] one that stopped answering), applies the policy
// (excluded TLDs, the private-address guard on every address it dials), then
// makes one TLS connection: the certificate is recorded from it whether or
// not it verifies, and robots.txt and the page are fetched over it
// (following redirects, each hop through the [Limiter] and the host's
// Crawl-delay). robots.txt is read by package robots. The final page's
// links become LINKS_TO edges from the probed host (not the host a
// redirect ended on) to hosts of another registrable domain. Every step's outcome is in the [Result]; nothing is
// retried inside a probe beyond DNS, and a probe never outlasts
// Config.HostTimeout.
//
// # Output
//
// A [Result] holds what one visit found; a [spyder.Batch] is one line of output,
// the results of several probes with the run's repeated nodes and edges
// left out. Package sink builds and writes batches.
package crawl
