package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Zone is a DNS zone of the world: its apex, the authoritative servers
// that serve it ("bind", "nsd", "knot", "pdns"; its NS records name them
// as ns-<server>.test) and its records in zone-file syntax, names absolute.
type Zone struct {
	Apex    string
	Servers []string
	Records []string
	// TCPOnly makes the zone's servers answer UDP questions for it with
	// an empty truncated answer, so that only TCP carries its records
	// (Knot's mod-noudp).
	TCPOnly bool
	// Signed signs the zone (DNSSEC; see signZone), and BadDS gives its
	// parent a DS record that matches none of its keys: a validating
	// resolver answers SERVFAIL for every name in it.
	Signed, BadDS bool
	text          string // the zone file, when signed
}

// Net is the loopback addresses of a world: 127.<Octet>.0.0/16, the DNS
// servers at .0.x, the web servers at .1.x.
type Net struct{ Octet int }

// AuthIP is the address of authoritative server s.
func (n Net) AuthIP(s string) string {
	i := slices.Index(authServers, s) + 1
	return fmt.Sprintf("127.%d.0.%d", n.Octet, i)
}

// DeadIP is an address of the world where nothing listens.
func (n Net) DeadIP() string { return fmt.Sprintf("127.%d.0.99", n.Octet) }

// ResolverIP is the address of the world's recursive resolver, Unbound.
func (n Net) ResolverIP() string { return fmt.Sprintf("127.%d.0.53", n.Octet) }

// WebIP is the address of the i-th site (from 1).
func (n Net) WebIP(i int) string { return fmt.Sprintf("127.%d.1.%d", n.Octet, i) }

// WebIP6 is the IPv6 address of the i-th site (from 1), in the unique
// local fd7e:<Octet>::/32, which the world puts on the loopback interface.
func (n Net) WebIP6(i int) string { return fmt.Sprintf("fd7e:%x::%x", n.Octet, i) }

// authServers are the authoritative servers, in the order of their
// addresses. BIND serves the root and test. zones.
var authServers = []string{"bind", "nsd", "knot", "pdns"}

// NSName is the name of authoritative server s in the world's NS records.
func NSName(s string) string { return "ns-" + s + ".test" }

const soa = "%s 300 IN SOA ns-bind.test. hostmaster.test. 1 3600 600 86400 60"

// zoneText is z's zone file.
func zoneText(z Zone) string {
	var b strings.Builder
	origin := strings.TrimSuffix(z.Apex, ".") + "."
	fmt.Fprintf(&b, "$TTL 300\n"+soa+"\n", origin)
	for _, s := range z.Servers {
		fmt.Fprintf(&b, "%s 300 IN NS %s.\n", origin, NSName(s))
	}
	for _, r := range z.Records {
		b.WriteString(r + "\n")
	}
	return b.String()
}

// topZones are the root zone and test., both on BIND: test. holds the
// servers' addresses and delegates every zone of zones to its servers.
func (n Net) topZones(zones []Zone, extra []string) []Zone {
	root := Zone{Apex: ".", Servers: []string{"bind"}, Records: []string{
		"test. 300 IN NS ns-bind.test.",
		"ns-bind.test. 300 IN A " + n.AuthIP("bind"),
	}}
	test := Zone{Apex: "test", Servers: []string{"bind"}, Records: extra}
	for _, s := range authServers {
		test.Records = append(test.Records, NSName(s)+". 300 IN A "+n.AuthIP(s))
	}
	for _, z := range zones {
		for _, s := range z.Servers {
			test.Records = append(test.Records, fmt.Sprintf("%s. 300 IN NS %s.", z.Apex, NSName(s)))
		}
	}
	return []Zone{root, test}
}

// StartDNS starts the authoritative servers with zones (and the root and
// test. zones, test. holding the extra records too) and Unbound recursing
// from the world's own root, and returns Unbound's address. The root and
// test. are signed, and so are the zones that say so: Unbound validates,
// the root's key its trust anchor.
func StartDNS(tb testing.TB, dir string, n Net, zones []Zone, extra []string) string {
	tb.Helper()
	zones = slices.Clone(zones)
	kdir := filepath.Join(dir, "dns")
	for i, z := range zones {
		if z.Signed {
			var ds string
			zones[i].text, ds = signZone(tb, kdir, z)
			extra = append(extra, ds)
		}
	}
	top := n.topZones(zones, extra)
	root, test := top[0], top[1]
	var ds, anchor string
	test.text, ds = signZone(tb, kdir, test)
	root.Records = append(root.Records, ds)
	root.text, anchor = signZone(tb, kdir, root)
	all := append([]Zone{root, test}, zones...)
	served := map[string][]Zone{}
	for _, z := range all {
		for _, s := range z.Servers {
			zdir := filepath.Join(dir, "dns", s)
			text := z.text
			if text == "" {
				text = zoneText(z)
			}
			writeFile(tb, zdir, zoneFile(z.Apex), []byte(text))
			served[s] = append(served[s], z)
		}
	}
	for _, s := range authServers {
		if len(served[s]) > 0 {
			startAuth(tb, filepath.Join(dir, "dns", s), s, n.AuthIP(s), served[s])
		}
	}
	udir := filepath.Join(dir, "dns", "unbound")
	hints := writeFile(tb, udir, "root.hints", []byte(fmt.Sprintf(". 3600 IN NS ns-bind.test.\nns-bind.test. 3600 IN A %s\n", n.AuthIP("bind"))))
	ta := writeFile(tb, udir, "root.ds", []byte(anchor+"\n"))
	conf := writeFile(tb, udir, "unbound.conf", []byte(fmt.Sprintf(unboundConf, n.ResolverIP(), udir, udir, hints, ta)))
	Start(tb, udir, "unbound", []string{n.ResolverIP() + ":53"}, "unbound", "-d", "-c", conf)
	return n.ResolverIP() + ":53"
}

// zoneFile is the file name of the zone of apex.
func zoneFile(apex string) string {
	if apex == "." {
		return "root.zone"
	}
	return apex + ".zone"
}

const unboundConf = `server:
  interface: %s
  port: 53
  username: ""
  chroot: ""
  directory: %q
  pidfile: "%s/unbound.pid"
  root-hints: %q
  do-not-query-localhost: no
  do-ip6: no
  access-control: 127.0.0.0/8 allow
  module-config: "validator iterator"
  trust-anchor-file: %q
  use-syslog: no
  verbosity: 1
  num-queries-per-thread: 4096
  outgoing-range: 8192
  outgoing-num-tcp: 256
  incoming-num-tcp: 256
  so-rcvbuf: 4m
  harden-referral-path: no
  qname-minimisation: no
  local-zone: "test." nodefault
remote-control:
  control-enable: no
`

// startAuth starts authoritative server s on ip, serving the zones of
// zones from the zone files in dir. Only Knot can serve a TCPOnly zone.
func startAuth(tb testing.TB, dir, s, ip string, zones []Zone) {
	tb.Helper()
	for _, z := range zones {
		if z.TCPOnly && s != "knot" {
			tb.Fatalf("interop: %s cannot serve %s over TCP only", s, z.Apex)
		}
	}
	var conf strings.Builder
	var prog string
	var args []string
	switch s {
	case "bind":
		fmt.Fprintf(&conf, "options {\n directory %q;\n listen-on port 53 { %s; };\n listen-on-v6 { none; };\n recursion no;\n", dir, ip)
		fmt.Fprintf(&conf, " pid-file %q;\n session-keyfile %q;\n dnssec-validation no;\n};\ncontrols { };\n", dir+"/named.pid", dir+"/session.key")
		for _, z := range zones {
			a := z.Apex
			fmt.Fprintf(&conf, "zone %q { type primary; file %q; };\n", a, zoneFile(a))
		}
		prog, args = "named", []string{"-g", "-c", filepath.Join(dir, "named.conf")}
		AddLoopback(tb, ip)
		writeFile(tb, dir, "named.conf", []byte(conf.String()))
	case "nsd":
		fmt.Fprintf(&conf, "server:\n ip-address: %s\n port: 53\n username: \"\"\n zonesdir: %q\n database: \"\"\n rrl-ratelimit: 0\n", ip, dir)
		fmt.Fprintf(&conf, " pidfile: \"%s/nsd.pid\"\n zonelistfile: \"%s/zone.list\"\n xfrdfile: \"%s/xfrd.state\"\n xfrdir: %q\n", dir, dir, dir, dir)
		conf.WriteString("remote-control:\n control-enable: no\n")
		for _, z := range zones {
			a := z.Apex
			fmt.Fprintf(&conf, "zone:\n name: %q\n zonefile: %q\n", a, zoneFile(a))
		}
		prog, args = "nsd", []string{"-d", "-c", filepath.Join(dir, "nsd.conf")}
		writeFile(tb, dir, "nsd.conf", []byte(conf.String()))
	case "knot":
		fmt.Fprintf(&conf, "server:\n  listen: %s@53\n  rundir: %q\ndatabase:\n  storage: %q\n", ip, dir, dir)
		fmt.Fprintf(&conf, "template:\n  - id: default\n    storage: %q\n    file: \"%%s.zone\"\nzone:\n", dir)
		for _, z := range zones {
			fmt.Fprintf(&conf, "  - domain: %s\n", z.Apex)
			if z.TCPOnly {
				conf.WriteString("    module: mod-noudp\n")
			}
		}
		prog, args = "knotd", []string{"-c", filepath.Join(dir, "knot.conf")}
		writeFile(tb, dir, "knot.conf", []byte(conf.String()))
	case "pdns":
		var named strings.Builder
		for _, z := range zones {
			a := z.Apex
			fmt.Fprintf(&named, "zone %q { type master; file %q; };\n", a, filepath.Join(dir, zoneFile(a)))
		}
		writeFile(tb, dir, "named.conf", []byte(named.String()))
		fmt.Fprintf(&conf, "launch=bind\nbind-config=%s/named.conf\nlocal-address=%s\nlocal-port=53\nsocket-dir=%s\n", dir, ip, dir)
		conf.WriteString("guardian=no\ndaemon=no\nsetuid=\nsetgid=\ndisable-syslog=yes\nloglevel=4\n")
		writeFile(tb, dir, "pdns.conf", []byte(conf.String()))
		prog, args = "pdns_server", []string{"--config-dir=" + dir}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	Start(tb, dir, s, []string{ip + ":53"}, prog, args...)
}
