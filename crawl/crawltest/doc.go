// Package crawltest is a simulated internet for crawl tests: an authoritative
// DNS server, HTTPS and HTTP servers with a test CA, and a world of hosts
// generated from a seed, all on loopback and started in-process by [Start].
// [World.StartResolver] starts more DNS servers (on 127.0.0.1 or ::1), and
// [DNSServer.SetMode] makes any of them silent, answer SERVFAIL or REFUSED,
// or truncate over UDP, for tests of a crawler's resolver handling.
//
// The world knows the exact edges a correct crawl must emit
// ([World.Expected]), computed from the generated plan rather than by
// crawling it, so a crawler can be checked for precision and recall. The
// rules it applies, called the contract here, are the ones spelled out
// below, after each kind of host; the plan's answers (DNS records, routes,
// robots.txt, pages) are the same data the servers serve, so the two cannot
// disagree.
//
// # What a world holds, and what Expected makes of it
//
// DNS (seed kinds; World.Describe names them):
//   - apex: 1–2 shared A records (TEST-NET), sometimes an AAAA (2001:db8::/32);
//     NS from a provider (sometimes published in upper case) or its own;
//     MX from a provider, its own, a null MX, or none; TXT, some
//     multi-string. → RESOLVES_TO each address, USES_NS/USES_MX each target
//     lowercased without the dot, nothing for a null MX.
//   - subdomain (blog./shop./… of a registered domain; some with their own
//     NS) → USES_NS only for NS records owned by the name itself.
//   - www-cname (www.X CNAME X) and cdn-cname (two hops) → ALIAS_OF the
//     first hop, RESOLVES_TO the chain's end; NS/MX/TXT queries for an alias
//     answer the target's records under the target's name: they do not count.
//   - cname-loop (two seeds pointing at each other), cname-self,
//     cname-dangling (to a name outside the world) → ALIAS_OF (never to
//     itself), no address, no HTTP.
//   - nxdomain → nothing. no-address (NS/MX/TXT only) → DNS edges only.
//   - private (10/8, 172.16/12, 192.168/16, 127/8, 169.254.169.254,
//     100.64/10, 0.0.0.0, fc00::/7, ::1, fe80::/10) → DNS edges only, no
//     connection; private-and-public → every address, the public one served.
//   - excluded-tld (.gov, .mil, .int, with a served page as a trap) → DNS
//     edges only; gov.uk (last label uk) → probed in full.
//   - refused (every address refuses) → DNS edges only; refused-then-served
//     (the first refuses) → probed in full through the next address.
//   - idn: a punycode name that pages link to in Unicode.
//   - Options.SlowFraction, in thirds: hang (accepts, never answers) → DNS
//     edges only; trickle-forever (robots.txt a byte per 200 ms, forever) →
//     DNS edges and USES_CERT; slow (page in 10 chunks 50 ms apart) → as a
//     normal host.
//
// TLS: valid certificates are shared per registered domain, per hosting
// bundle (several unrelated domains) or per host; some are expired,
// self-signed or for another name (→ USES_CERT all the same, Verified false
// in World.Certs); some hosts have no certificate for their name, so the
// handshake fails (→ no USES_CERT, no page: their http:// page is a trap).
//
// robots.txt for user agent token "spyder": allow (empty Disallow, other
// paths, CRLF and comments, a group for another bot, "*" blocked but
// "spyder" allowed, 404, 410, Crawl-delay 1 s) or block (everyone, "spyder",
// "SPYDER", "spyder" in a shared group, 500, 503) → a blocked host keeps its
// DNS edges and USES_CERT and gets no LINKS_TO; World.Blocked lists them.
//
// The page "/": HTML, XHTML, tag soup, a page past the 512 KiB cap (links on
// both sides: only those before count), JSON, text/plain holding HTML, PNG,
// 404/500/503 pages with links (→ none count), redirects (same host path,
// 3-hop chain: followed; to another host or to plain http: followed, that
// host's robots.txt checked, the final page's links credited to the probed
// host and filtered by the probed host's apex; to a host whose robots.txt
// blocks spyder, to a name that does not exist, a 10-hop chain, a loop, two
// hosts redirecting to each other: no links). Every hop within the 5-hop
// limit between registrable domains is a REDIRECTS_TO edge from the hop's
// host to the next, even when the next host then fails or closes a loop.
//
// Links: a/link href, script/img/iframe/source src; absolute, upper-case,
// with port, user info or trailing dot, protocol-relative, relative (with
// and without a first <base href>; a second one is ignored), mailto:,
// javascript:, data:, ftp:, tel:, IDN, IP literals, invalid names,
// *.github.io, sibling .co.uk domains, names that do not exist. LINKS_TO
// goes to each distinct host (by host.Parse) whose apex (eTLD+1)
// differs from the visited host's. Decoys that must not count: URLs in
// comments, script text, textarea, form action, srcset, data-href, text.
//
// Options.Hostile adds hosts meant to exhaust a crawler (see
// [World.Hostile]): a TLS server sending a byte a second, a body that never
// ends, a 1 GiB page, a page of 100,000 links, 50 redirects, 1,000 DNS
// records, a certificate with 10,000 SANs, a name that is not valid UTF-8,
// a CNAME loop, a chain of 30 CNAMEs, a name the DNS server never
// answers and an alias whose target it cannot reach (SERVFAIL to every
// question of the alias but CNAME → ALIAS_OF the target, no address).
package crawltest
