package main

import (
	"testing"

	"github.com/spyder-crawler/spyder"
)

// checkOnce fails when out, the whole output of one run, repeats a node key
// (a domain's host, an IP, a certificate's SPKI) or an edge key (type,
// source, target), or when an edge names a domain that has no node.
func checkOnce(tb testing.TB, out output) {
	tb.Helper()
	repeats := func(kind string, keys []string) {
		tb.Helper()
		n := map[string]int{}
		var rep []string
		for _, k := range keys {
			if n[k]++; n[k] == 2 {
				rep = append(rep, k)
			}
		}
		if len(rep) > 0 {
			tb.Errorf("%d %s keys written more than once in the run, want 0; e.g. %q", len(rep), kind, rep[:min(len(rep), 5)])
		}
	}
	var domains, ips, certs, edges []string
	has := map[string]bool{}
	for _, d := range out.Domains {
		domains = append(domains, string(d.Host))
		has[string(d.Host)] = true
	}
	for _, n := range out.IPs {
		ips = append(ips, n.IP)
	}
	for _, c := range out.Certs {
		certs = append(certs, c.SPKISHA256)
	}
	var dangling []string
	for _, e := range out.Edges {
		edges = append(edges, e.Type+" "+e.Source+" "+e.Target)
		if !has[e.Source] {
			dangling = append(dangling, e.Source)
		}
		switch e.Type {
		case spyder.UsesNS, spyder.UsesMX, spyder.AliasOf, spyder.LinksTo:
			if !has[e.Target] {
				dangling = append(dangling, e.Target)
			}
		}
	}
	repeats("domain node", domains)
	repeats("IP node", ips)
	repeats("certificate node", certs)
	repeats("edge", edges)
	if len(dangling) > 0 {
		tb.Errorf("%d edge ends name a domain with no node, want 0; e.g. %q", len(dangling), dangling[:min(len(dangling), 5)])
	}
	if len(out.Domains) == 0 || len(out.Edges) == 0 {
		tb.Errorf("output holds %d domain nodes and %d edges: nothing to check", len(out.Domains), len(out.Edges))
	}
}
