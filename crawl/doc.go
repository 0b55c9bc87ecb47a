// Package crawl turns hosts into the nodes and edges of DESIGN.md §1 and
// writes them out.
//
// # Probing
//
// A [Crawler] probes one host at a time per call, from any number of
// workers: [Crawler.Probe] sends the host's DNS questions (A, AAAA, NS,
// CNAME, MX, TXT) at once to the configured resolver, applies the policy
// (excluded TLDs, the private-address guard on every address it dials), then
// makes one TLS connection: the certificate is recorded from it whether or
// not it verifies, and robots.txt and the page are fetched over it
// (following redirects, each hop through the [Limiter] and the host's
// Crawl-delay). The page's links become LINKS_TO edges to hosts of another
// registrable domain. Every step's outcome is in the [Result]; nothing is
// retried inside a probe beyond DNS, and a probe never outlasts
// Config.HostTimeout.
//
// # Output
//
// A [Batcher] groups results into [Batch] lines, drops the nodes and edges
// already emitted in the run (an [Emitted] seen set: [MemoryEmitted] here,
// bbolt and Redis ones in the store packages) and hands each batch to a
// [Sink] such as [JSONSink]. [Batcher.Add] returns once its result's batch
// is durable, so a worker acknowledges its host only then.
package crawl
