package spyder

import "github.com/spyder-crawler/spyder/host"

// Result is what visiting one host found: its nodes and edges, how each
// step ended, and the hosts it discovered. Nodes and edges are not
// deduplicated across results: the sink that builds batches leaves out
// what the run already wrote.
type Result struct {
	Host    host.Name
	Domains []DomainNode
	IPs     []IPNode
	Certs   []CertNode
	Edges   []Edge
	// Outcome has one entry per step, in the order dns, tls, robots, page.
	Outcome HostOutcome
	// Discovered lists the other hosts found (name servers, mail
	// exchangers, the CNAME target, linked and redirect hosts), for a
	// continuous crawl to enqueue.
	Discovered []host.Name
}
