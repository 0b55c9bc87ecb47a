package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestE2E_SeveralResolvers crawls a world with the built binary through
// three resolvers: one that never answers, the world's own, and one on
// IPv6 loopback ("[::1]:port"; 127.0.0.1 on a machine without it). The output holds every expected edge, the dns steps that met the
// silent resolver say so, and /metrics shows it set aside while the others
// answered.
func TestE2E_SeveralResolvers(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 40, Seed: 23})
	ip := "::1"
	if !hasIPv6Loopback() {
		t.Log("no IPv6 loopback: the second resolver listens on 127.0.0.1")
		ip = "127.0.0.1"
	}
	second := w.StartResolver(t, ip)
	silent := w.StartResolver(t, "127.0.0.1")
	silent.SetMode(crawltest.DNSSilent)
	resolvers := silent.Addr + "," + w.Resolver + "," + second.Addr

	addr, key := redistest.Addr(t), redistest.Prefix(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	args := append([]string{"run", "--redis", addr, "--queue-key", key, "--domains", mustDomains(t, w.Seeds),
		"--out", out, "--metrics-addr", "127.0.0.1:0"}, worldArgs(t, w)...)
	args = append(args, "--resolver", resolvers) // the last --resolver wins
	p := startSpyder(t, args...)
	var maddr string
	waitFor(t, 30*time.Second, "metrics_listening", func() bool {
		if l := logLines(p.log(), "metrics_listening"); len(l) > 0 {
			maddr, _ = l[0]["addr"].(string)
		}
		return maddr != ""
	})
	get := func() string {
		resp, err := http.Get("http://" + maddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	var metrics string
	waitFor(t, 90*time.Second, "every host to be acknowledged", func() bool {
		metrics = get()
		return strings.Contains(metrics, fmt.Sprintf("spyder_acked_total %d", len(w.Seeds)))
	})
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log())
	}

	got := mustReadBatches(t, out)
	checkEdges(t, w, got.Edges)
	met := 0
	for _, pr := range got.Probes {
		for _, s := range pr.Steps {
			if len(s.Resolvers) > 0 && s.Resolvers[0].Server == silent.Addr && s.Resolvers[0].Timeouts > 0 {
				met++
			}
		}
	}
	if met == 0 {
		t.Errorf("no dns step records the silent resolver's timeouts")
	}
	for _, want := range []string{
		fmt.Sprintf(`spyder_dns_resolver_up{resolver=%q} 0`, silent.Addr),
		fmt.Sprintf(`spyder_dns_resolver_set_aside_total{resolver=%q} 1`, silent.Addr),
		fmt.Sprintf(`spyder_dns_queries_total{resolver=%q,result="answer"} 0`, silent.Addr),
		fmt.Sprintf(`spyder_dns_resolver_up{resolver=%q} 1`, w.Resolver),
		fmt.Sprintf(`spyder_dns_resolver_up{resolver=%q} 1`, second.Addr),
		fmt.Sprintf(`spyder_dns_queries_total{resolver=%q,result="timeout"} 0`, second.Addr),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, r := range []string{w.Resolver, second.Addr} {
		if strings.Contains(metrics, fmt.Sprintf(`spyder_dns_queries_total{resolver=%q,result="answer"} 0`, r)) {
			t.Errorf("resolver %s answered nothing", r)
		}
	}
}

func hasIPv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
