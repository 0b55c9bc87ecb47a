package sink

import (
	"context"
	"fmt"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
)

// Seen-set key prefixes: one namespace per kind of record. A domain node
// has one key whether a visit or an edge brought it, so it is written once
// per run.
const (
	keyDomain = "d\x00"
	keyIP     = "i\x00"
	keyCert   = "c\x00"
	keyEdge   = "e\x00"
)

// entry is one node or edge of a batch being built that goes through the
// run's seen set: its key, and which of the candidates it is (kind and
// index).
type entry struct {
	key  string
	kind int
	i    int
}

// Kinds of entry, each the index of its candidates' slice.
const (
	kindDomain = iota
	kindIP
	kindCert
	kindEdge
)

// candidates are the nodes and edges of a batch being built that are
// written only if the run's seen set does not hold them, at the indexes
// their entries name.
type candidates struct {
	domains []spyder.DomainNode
	ips     []spyder.IPNode
	certs   []spyder.CertNode
	edges   []spyder.Edge
	items   []entry
	inBatch map[string]bool // the keys of items
}

// add makes the node or edge i of kind a candidate under key, unless one
// is already.
func (c *candidates) add(key string, kind, i int) {
	if !c.inBatch[key] {
		c.inBatch[key] = true
		c.items = append(c.items, entry{key, kind, i})
	}
}

// ownEdge is an edge from a probed host, as build tells them apart in a
// batch without building a seen-set key.
type ownEdge struct{ typ, source, target string }

// build returns the batch of results' new nodes and edges (and every
// result's outcome), with the keys to mark once it is written.
//
// Only what several hosts' visits may both meet goes through the run's seen
// set: domain, IP and certificate nodes, and the edges whose source is not
// the probed host (an IP's IN_AS, a redirect hop's REDIRECTS_TO). An edge
// from the probed host itself is written by that host's visit alone, as
// the queue leases each host to one probe at a time and a done host is not
// probed again in the same run unless it is queued again; keeping it out
// of the seen set is most of what the set would otherwise hold. The price:
// a host probed twice in one run (its lease expired after its batch was
// written and before its ack, or it was queued again by hand, by queue
// retry or by --revisit under the same --run) writes its own edges again.
//
// A probed host's node comes from its own visit, even when the visit found
// nothing (an NXDOMAIN host still gets its node, for the edges that point
// at it). A host that appears only as another host's edge target gets a
// bare node, unless the queue holds it to be probed: then its own visit
// writes its node later, with what it learns, and the node is not written
// twice.
func (b *Batcher) build(ctx context.Context, results []*spyder.Result) (*spyder.Batch, []string, error) {
	batch := &spyder.Batch{
		ProbeID: b.cfg.ProbeID, RunID: b.cfg.RunID, BatchID: newBatchID(),
		Timestamp:   b.cfg.Now().Unix(),
		NodesDomain: []spyder.DomainNode{}, NodesIP: []spyder.IPNode{}, NodesCert: []spyder.CertNode{}, Edges: []spyder.Edge{},
	}
	// Sized for all that results hold, so that no slice or map grows by
	// copying itself: a batch is built every few hundred milliseconds.
	var nDomains, nIPs, nCerts, nEdges int
	for _, r := range results {
		nDomains, nIPs, nCerts, nEdges = nDomains+len(r.Domains)+1, nIPs+len(r.IPs), nCerts+len(r.Certs), nEdges+len(r.Edges)
	}
	c := &candidates{
		domains: make([]spyder.DomainNode, 0, nDomains), ips: make([]spyder.IPNode, 0, nIPs),
		certs: make([]spyder.CertNode, 0, nCerts), items: make([]entry, 0, nDomains+nIPs+nCerts),
		inBatch: make(map[string]bool, nDomains+nIPs+nCerts),
	}
	batch.Edges = make([]spyder.Edge, 0, nEdges)
	// Probed hosts' nodes first, so that a bare node of the same host in
	// this batch is left out.
	for _, r := range results {
		batch.Outcomes = append(batch.Outcomes, r.Outcome)
		if b.cfg.Hosts {
			batch.Hosts = append(batch.Hosts, spyder.NewHostRecord(r, b.cfg.ProbeID, b.cfg.RunID, batch.Timestamp))
		}
		if d, ok := ownNode(r, batch.Timestamp); ok {
			c.domains = append(c.domains, d)
			c.add(keyDomain+string(d.Host), kindDomain, len(c.domains)-1)
		}
	}
	bare := make([]spyder.DomainNode, 0, nDomains)
	own := make(map[ownEdge]bool, nEdges)
	for _, r := range results {
		for _, d := range r.Domains {
			if d.Host != r.Host && !c.inBatch[keyDomain+string(d.Host)] {
				c.inBatch[keyDomain+string(d.Host)] = true
				bare = append(bare, d)
			}
		}
		for _, n := range r.IPs {
			c.ips = append(c.ips, n)
			c.add(keyIP+n.IP, kindIP, len(c.ips)-1)
		}
		for _, n := range r.Certs {
			c.certs = append(c.certs, n)
			c.add(keyCert+n.SPKISHA256, kindCert, len(c.certs)-1)
		}
		for _, e := range r.Edges {
			if e.Source != string(r.Host) {
				c.edges = append(c.edges, e)
				c.add(keyEdge+e.Type+"\x00"+e.Source+"\x00"+e.Target, kindEdge, len(c.edges)-1)
			} else if k := (ownEdge{e.Type, e.Source, e.Target}); !own[k] {
				// The host's own edge: only its visit writes it, and the
				// queue leases a host to one probe at a time, so it needs
				// no seen-set key (see build's doc).
				own[k] = true
				batch.Edges = append(batch.Edges, e)
			}
		}
	}
	bare, err := b.unqueued(ctx, bare)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range bare {
		c.domains = append(c.domains, d)
		c.items = append(c.items, entry{keyDomain + string(d.Host), kindDomain, len(c.domains) - 1})
	}
	fresh, err := b.fresh(ctx, c, batch)
	if err != nil {
		return nil, nil, err
	}
	return batch, fresh, nil
}

// ownNode returns the node of the probed host of r, or a node with only
// its name when the visit found nothing to fill one (stamped ts).
func ownNode(r *spyder.Result, ts int64) (spyder.DomainNode, bool) {
	for _, d := range r.Domains {
		if d.Host == r.Host {
			return d, true
		}
	}
	if r.Host == "" {
		return spyder.DomainNode{}, false
	}
	return spyder.DomainNode{Host: r.Host, Apex: r.Host.Apex(), FirstSeen: ts, LastSeen: ts}, true
}

// unqueued returns the nodes of ds whose hosts the queue does not hold to
// be probed (all of them without a queue).
func (b *Batcher) unqueued(ctx context.Context, ds []spyder.DomainNode) ([]spyder.DomainNode, error) {
	if b.cfg.Queue == nil || len(ds) == 0 {
		return ds, nil
	}
	hs := make([]host.Name, len(ds))
	for i, d := range ds {
		hs[i] = host.Name(d.Host)
	}
	queued, err := b.cfg.Queue.Queued(ctx, hs)
	if err != nil {
		return nil, fmt.Errorf("check queued hosts: %w", err)
	}
	if len(queued) != len(ds) {
		return nil, fmt.Errorf("check queued hosts: %d answers for %d hosts", len(queued), len(ds))
	}
	out := ds[:0]
	for i, d := range ds {
		if !queued[i] {
			out = append(out, d)
		}
	}
	return out, nil
}

// fresh adds to batch the candidates of c not yet emitted in the run, in
// the order of c's items, and returns their keys.
func (b *Batcher) fresh(ctx context.Context, c *candidates, batch *spyder.Batch) ([]string, error) {
	if len(c.items) == 0 {
		return nil, nil
	}
	keys := make([]string, len(c.items))
	for i, it := range c.items {
		keys[i] = it.key
	}
	seen, err := b.seen.Seen(ctx, b.cfg.RunID, keys)
	if err != nil {
		return nil, fmt.Errorf("check emitted: %w", err)
	}
	if len(seen) != len(keys) {
		return nil, fmt.Errorf("check emitted: %d answers for %d keys", len(seen), len(keys))
	}
	fresh := keys[:0] // each key is read before its place is written
	for i, it := range c.items {
		if seen[i] {
			continue
		}
		switch it.kind {
		case kindDomain:
			batch.NodesDomain = append(batch.NodesDomain, c.domains[it.i])
		case kindIP:
			batch.NodesIP = append(batch.NodesIP, c.ips[it.i])
		case kindCert:
			batch.NodesCert = append(batch.NodesCert, c.certs[it.i])
		case kindEdge:
			batch.Edges = append(batch.Edges, c.edges[it.i])
		}
		fresh = append(fresh, it.key)
	}
	return fresh, nil
}
