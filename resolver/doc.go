// Package resolver is the DNS client a crawl looks hosts up with. A
// [Client] sends a host's questions (A, AAAA, NS, MX, TXT; their answers
// carry a CNAME) at once, over UDP sockets shared by many lookups, to the
// next of its servers in turn; asks another server when one is silent or
// answers SERVFAIL or REFUSED; asks again over TCP when an answer is
// truncated; and sets aside for [Cooldown] a server that stopped
// answering. [Client.LookupAll] combines the answers into an [Answer]:
// the addresses, the names the host points at (parsed as [host.Name]s:
// a name enters spyder from a DNS answer here), its TXT records and a
// status in the output's words. Each server's counts are kept for the
// output and for [Client.Collector].
package resolver
