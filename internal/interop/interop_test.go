package interop

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl"
	"github.com/spyder-crawler/spyder/host"
)

// world is a started interop world.
type world struct {
	net      Net
	ca       *CA
	resolver string
	sites    map[string]*Site
	names    map[string]Name
	visit    []string // the hosts the crawl visits
}

// startWorld issues the certificates, writes the zones and configurations
// and starts every server.
func startWorld(t *testing.T) *world {
	RequireTools(t, "nginx", "apache2", "lighttpd", "haproxy", "caddy", "h2o", "openssl", "dnssec-keygen", "dnssec-signzone", "dnssec-dsfromkey", "unbound", "nsd", "knotd", "named", "pdns_server", "ip")
	dir := t.TempDir()
	// Apache's workers run as www-data: they must reach the files.
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{net: freeNet(t), ca: ca, sites: map[string]*Site{}, names: map[string]Name{}}
	ss := append(sites(), moreSites()...)
	if len(ss) > 254 {
		t.Fatalf("interop: %d sites; the world's /24 of site addresses holds 254", len(ss))
	}
	for i, s := range ss {
		s.IP = w.net.WebIP(i + 1)
		if s.IP6 {
			s.IP = w.net.WebIP6(i + 1)
			AddLoopback(t, s.IP)
		}
		spec := s.Cert
		if spec.Names == nil {
			spec.Names = []string{s.Host}
		}
		spec.Key, spec.CertFile = s.Key, filepath.Join(dir, "certs", s.Host+".pem")
		os.MkdirAll(filepath.Dir(spec.CertFile), 0o755)
		if s.Leaf, err = ca.Issue(spec); err != nil {
			t.Fatal(err)
		}
		w.sites[s.Host] = s
		w.visit = append(w.visit, s.Host)
	}
	var zs []Zone
	var extra []string
	for _, n := range names() {
		w.names[n.Host] = n
		if !slices.Contains(w.visit, n.Host) {
			w.visit = append(w.visit, visitName(n))
		}
	}
	for apex, servers := range zones {
		zs = append(zs, Zone{Apex: apex, Servers: servers, Records: w.records(apex), TCPOnly: tcpOnly[apex], Signed: signed[apex]})
	}
	zs = append(zs, Zone{Apex: "bogus.test", Servers: []string{"nsd"}, Signed: true, BadDS: true,
		Records: []string{"bogus.test. 300 IN A " + w.sites["nginx.test"].IP}})
	extra = append(extra, "lame.test. 300 IN NS ns-dead.test.", "ns-dead.test. 300 IN A "+w.net.DeadIP(), "refused.test. 300 IN NS ns-nsd.test.",
		"refused-knot.test. 300 IN NS ns-knot.test.", "refused-pdns.test. 300 IN NS ns-pdns.test.")
	w.resolver = StartDNS(t, dir, w.net, zs, extra)
	StartWeb(t, dir, ss)
	return w
}

// visitName is the host the crawl visits for n.
func visitName(n Name) string {
	if n.Wildcard {
		return "any." + n.Host
	}
	return n.Host
}

// records are the records of the zone of apex: the A records of the
// sites in it, and the names' records.
func (w *world) records(apex string) []string {
	var rs []string
	for _, s := range w.sites {
		if host.Name(s.Host).Apex() == host.Name(apex) {
			if _, named := w.names[s.Host]; !named {
				rs = append(rs, s.Host+". 300 IN "+s.rr()+" "+s.IP)
			}
		}
	}
	for _, n := range w.names {
		if n.Zone != apex {
			continue
		}
		owner := n.Host + "."
		if n.Wildcard {
			owner = "*." + owner
		}
		if n.Site != "" {
			site := w.sites[n.Site]
			rs = append(rs, owner+" 300 IN "+site.rr()+" "+site.IP)
		}
		if n.DeadA {
			rs = append(rs, owner+" 300 IN A "+w.net.DeadIP())
		}
		if n.CNAME != "" {
			rs = append(rs, owner+" 300 IN CNAME "+n.CNAME+".")
		}
		for _, mx := range n.MX {
			rs = append(rs, owner+" 300 IN MX 10 "+mx+".")
		}
		for _, txt := range n.TXT {
			rs = append(rs, owner+` 300 IN TXT "`+txt+`"`)
		}
	}
	return rs
}

// freeNet picks a /16 of 127.0.0.0/8 where nothing listens on port 53.
func freeNet(t *testing.T) Net {
	for range 50 {
		n := Net{Octet: 64 + rand.IntN(180)}
		l, err := net.Listen("tcp", n.AuthIP("bind")+":53")
		if err == nil {
			l.Close()
			return n
		}
	}
	t.Fatal("interop: no free loopback /16")
	return Net{}
}

// TestInterop_World crawls the world twice, each time checking every edge
// and the steps: with a crawl.Crawler, and with the spyder binary as a
// user runs it (spyder run --domains --allow-private, the world's resolver
// and CA), whose output is read back from its JSON lines.
func TestInterop_World(t *testing.T) {
	w := startWorld(t)
	if d := os.Getenv("INTEROP_HOLD"); d != "" {
		t.Logf("resolver %s", w.resolver)
		hold, _ := time.ParseDuration(d)
		time.Sleep(hold)
	}
	t.Run("Crawler", func(t *testing.T) { w.crawlWithCrawler(t) })
	t.Run("SpyderRun", func(t *testing.T) { w.crawlWithSpyderRun(t) })
}

func (w *world) crawlWithCrawler(t *testing.T) {
	c, err := crawl.New(crawl.Config{
		Resolver: w.resolver, RootCAs: w.ca.Pool(), AllowPrivate: true, ExcludeTLDs: []string{},
		HostTimeout: 20 * time.Second, DNSTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	results := make([]*spyder.Result, len(w.visit))
	var wg sync.WaitGroup
	for i, h := range w.visit {
		wg.Go(func() { results[i] = c.Visit(context.Background(), host.Name(h)) })
	}
	wg.Wait()
	var got []spyder.Edge
	for _, r := range results {
		got = append(got, r.Edges...)
		w.checkSteps(t, r.Outcome)
		if testing.Verbose() {
			var steps []string
			for _, st := range r.Outcome.Steps {
				steps = append(steps, st.Step+"="+st.Status)
				if st.Step == spyder.StepTLS && st.Status == spyder.StatusTLSError {
					steps = append(steps, "("+st.Detail+")")
				}
			}
			t.Logf("%-26s %s", r.Host, strings.Join(steps, " "))
		}
		if n, ok := w.names[string(r.Host)]; ok && len(n.TXT) > 0 {
			if got := hostTXT(r); len(got) != len(n.TXT) {
				t.Errorf("%s: TXT records = %d, want %d", r.Host, len(got), len(n.TXT))
			}
		}
	}
	compareEdges(t, w.expected(), got)
}

func (w *world) crawlWithSpyderRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "spyder")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", bin, "github.com/spyder-crawler/spyder/cmd/spyder").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ca := writeFile(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.ca.Root.Raw}))
	list := writeFile(t, dir, "domains.txt", []byte(strings.Join(w.visit, "\n")+"\n"))
	out := filepath.Join(dir, "out.jsonl")
	cmd := exec.Command(bin, "run", "--domains", list, "--db", filepath.Join(dir, "spyder.db"), "--allow-private",
		"--resolver", w.resolver, "--ca-file", ca, "--out", out, "--progress=false", "--log-level", "error", "--host-timeout", "20s")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("spyder run: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []spyder.Edge
	outcomes := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var b spyder.Batch
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		got = append(got, b.Edges...)
		for _, o := range b.Outcomes {
			w.checkSteps(t, o)
			outcomes++
		}
	}
	if outcomes != len(w.visit) {
		t.Errorf("output has %d outcomes, want one per host, %d", outcomes, len(w.visit))
	}
	compareEdges(t, w.expected(), got)
}

// checkSteps checks the steps of r against what the world says of its host.
func (w *world) checkSteps(t *testing.T, r spyder.HostOutcome) {
	t.Helper()
	want := map[string]string{}
	if n, ok := w.names[string(r.Host)]; ok {
		for k, v := range n.Steps {
			want[k] = v
		}
		if tls := stepOf(r, spyder.StepTLS); n.NoCert && !strings.Contains(tls.Detail, "server error") {
			t.Errorf("%s: tls step %+v, want its detail to say server error", r.Host, tls)
		}
	}
	if s := w.sites[string(r.Host)]; s != nil {
		want[spyder.StepTLS] = spyder.StatusOK
		if !s.Verified {
			want[spyder.StepTLS] = spyder.StatusUnverified
		}
		want[spyder.StepPage] = spyder.StatusOK
		if s.PageStep != "" {
			want[spyder.StepPage] = s.PageStep
		}
		if s.TLSFail != "" {
			want[spyder.StepTLS], want[spyder.StepPage] = spyder.StatusTLSError, spyder.StatusTLSError
			if tls := stepOf(r, spyder.StepTLS); !strings.Contains(tls.Detail, s.TLSFail) {
				t.Errorf("%s: tls step %+v, want its detail to say %q", r.Host, tls, s.TLSFail)
			}
		}
	}
	for _, st := range r.Steps {
		if wv, ok := want[st.Step]; ok && !slices.Contains(strings.Split(wv, "|"), st.Status) {
			t.Errorf("%s: step %s = %s (%s), want %s; dns step: %s (%s)", r.Host, st.Step, st.Status, st.Detail, wv, r.Steps[0].Status, r.Steps[0].Detail)
		}
	}
}

// expected is every edge a correct crawl of the world records.
func (w *world) expected() []spyder.Edge {
	var es []spyder.Edge
	add := func(typ, src, dst string) { es = append(es, spyder.Edge{Type: typ, Source: src, Target: dst}) }
	for _, h := range w.visit {
		n, named := w.names[strings.TrimPrefix(h, "any.")]
		if !named {
			n = Name{Host: h, Site: h}
		}
		if servers, apex := zones[h]; apex {
			for _, s := range servers {
				add(spyder.UsesNS, h, NSName(s))
			}
		}
		for _, mx := range n.MX {
			add(spyder.UsesMX, h, mx)
		}
		if n.CNAME != "" {
			add(spyder.AliasOf, h, n.CNAME)
		}
		site := w.siteOf(n)
		if site == nil {
			continue
		}
		add(spyder.ResolvesTo, h, site.IP)
		if n.DeadA {
			add(spyder.ResolvesTo, h, w.net.DeadIP())
		}
		if site.TLSFail != "" || n.NoCert {
			continue
		}
		add(spyder.UsesCert, h, site.Leaf.SPKI)
		apex := host.Name(h).Apex()
		for _, l := range site.Links {
			if host.Name(l).Apex() != apex {
				add(spyder.LinksTo, h, l)
			}
		}
		for _, r := range site.RedirectsTo {
			add(spyder.RedirectsTo, r[0], r[1])
		}
	}
	return es
}

// siteOf is the site whose address n resolves to, following its CNAMEs;
// nil when it resolves to none.
func (w *world) siteOf(n Name) *Site {
	for range 8 {
		if n.Site != "" {
			return w.sites[n.Site]
		}
		next, ok := w.names[n.CNAME]
		if !ok {
			return w.sites[n.CNAME]
		}
		n = next
	}
	return nil
}

// compareEdges fails t for every edge of want missing from got and of got
// missing from want, and logs precision and recall per edge type.
func compareEdges(t *testing.T, want, got []spyder.Edge) {
	t.Helper()
	key := func(e spyder.Edge) string { return e.Type + " " + e.Source + " -> " + e.Target }
	wantSet, gotSet := map[string]bool{}, map[string]bool{}
	type tally struct{ want, got, both int }
	byType := map[string]*tally{}
	count := func(typ string) *tally {
		if byType[typ] == nil {
			byType[typ] = &tally{}
		}
		return byType[typ]
	}
	for _, e := range want {
		if !wantSet[key(e)] {
			wantSet[key(e)] = true
			count(e.Type).want++
		}
	}
	for _, e := range got {
		if !gotSet[key(e)] {
			gotSet[key(e)] = true
			count(e.Type).got++
			if wantSet[key(e)] {
				count(e.Type).both++
			}
		}
	}
	var missed, invented []string
	for k := range wantSet {
		if !gotSet[k] {
			missed = append(missed, k)
		}
	}
	for k := range gotSet {
		if !wantSet[k] {
			invented = append(invented, k)
		}
	}
	sort.Strings(missed)
	sort.Strings(invented)
	for _, k := range missed {
		t.Errorf("missed: %s", k)
	}
	for _, k := range invented {
		t.Errorf("invented: %s", k)
	}
	var types []string
	for typ := range byType {
		types = append(types, typ)
	}
	sort.Strings(types)
	t.Logf("%-12s %8s %8s %8s %9s %7s", "edge", "expected", "found", "correct", "precision", "recall")
	for _, typ := range types {
		c := byType[typ]
		t.Logf("%-12s %8d %8d %8d %9s %7s", typ, c.want, c.got, c.both, ratio(c.both, c.got), ratio(c.both, c.want))
	}
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

// stepOf returns o's step named step, or a zero one when o never got to it.
func stepOf(o spyder.HostOutcome, step string) spyder.StepOutcome {
	for _, s := range o.Steps {
		if s.Step == step {
			return s
		}
	}
	return spyder.StepOutcome{}
}

// hostTXT returns the TXT records r found for its own host.
func hostTXT(r *spyder.Result) []string {
	for _, d := range r.Domains {
		if d.Host == r.Host {
			return d.TXT
		}
	}
	return nil
}
