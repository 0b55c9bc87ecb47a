package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/internal/browsertest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// eval evaluates expr in the page and returns its value as T.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// metricsAddr waits for p's metrics_listening line and returns its address.
func metricsAddr(t *testing.T, p *proc) string {
	t.Helper()
	var addr string
	waitFor(t, 30*time.Second, "metrics_listening", func() bool {
		if l := logLines(p.log(), "metrics_listening"); len(l) > 0 {
			addr, _ = l[0]["addr"].(string)
		}
		return addr != ""
	})
	return addr
}

// openDashboard loads the page at addr in Chromium (ctx, from
// browsertest.New, started before the crawl: a busy machine can take
// seconds to start it) and waits for the page's first status.
func openDashboard(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the page's first status", func() bool {
		return eval[bool](t, ctx, `!!window.spyderStatus`)
	})
}

// TestDashboard_Standalone loads the dashboard of a running standalone
// crawl in Chromium: the numbers and the depth chart move as the crawl
// goes, the dead items are listed with their errors, and the retry button
// puts them back in the queue, after which the run crawls them.
func TestDashboard_Standalone(t *testing.T) {
	t.Parallel()
	const hosts, dead = 60, 2
	db := liveDB(t, hosts, dead)
	ctx := browsertest.New(t, 180*time.Second)
	p, out := slowRun(t, db, "--metrics-addr", "127.0.0.1:0")
	openDashboard(t, ctx, metricsAddr(t, p))

	pending0 := eval[float64](t, ctx, `spyderStatus.stats.pending`)
	waitFor(t, 15*time.Second, "pending to fall and the chart to draw", func() bool {
		return eval[float64](t, ctx, `spyderStatus.stats.pending`) < pending0 &&
			eval[float64](t, ctx, `document.querySelector('#depth polyline.pending').points.length`) >= 3
	})
	if got := eval[string](t, ctx, `document.getElementById('pending').textContent`); got == "–" || got == "" {
		t.Errorf("pending card shows %q", got)
	}
	if got := eval[float64](t, ctx, `spyderStatus.inflight`); got < 1 || got > 3 {
		t.Errorf("in flight here = %v, want 1-3 (--concurrency 3)", got)
	}
	waitFor(t, 10*time.Second, "a rate, an ok outcome and the probe's heartbeat", func() bool {
		return eval[float64](t, ctx, `spyderStatus.rate`) > 0 &&
			eval[string](t, ctx, `document.querySelector('#outcomes td') ? document.querySelector('#outcomes td').textContent : ''`) == "ok" &&
			eval[string](t, ctx, `document.querySelector('#probes tbody td') ? document.querySelector('#probes tbody td').textContent : ''`) == "laptop"
	})
	rows := eval[string](t, ctx, `document.querySelector('#dead-list tbody').innerText`)
	for _, want := range []string{"h00.example.com", "disk on fire h00.example.com", "h01.example.com", "disk on fire h01.example.com"} {
		if !strings.Contains(rows, want) {
			t.Errorf("dead list lacks %q:\n%s", want, rows)
		}
	}
	browsertest.Screenshot(t, ctx, "dashboard-standalone")

	if err := chromedp.Do(ctx, chromedp.Click("#retry")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the retry to empty dead", func() bool {
		return eval[float64](t, ctx, `spyderStatus.stats.dead`) == 0 &&
			eval[string](t, ctx, `document.getElementById('retried').textContent`) == "retried 2" &&
			eval[float64](t, ctx, `document.querySelectorAll('#dead-list tbody tr').length`) == 0
	})
	browsertest.Screenshot(t, ctx, "dashboard-standalone-retried")
	if err := p.wait(t, 60*time.Second); err != nil {
		t.Fatalf("run: %v\n%s", err, p.log())
	}
	if got := len(probeCounts(mustReadBatches(t, out).Probes)); got != hosts {
		t.Errorf("%d hosts written, want all %d: the retried ones were not crawled", got, hosts)
	}
}

// TestDashboard_FleetProbesAndHealth runs two fleet probes on a real Redis:
// `queue stats --redis` and each probe's dashboard list both with their
// rate and heartbeat; when Redis loses its data, /healthz turns 503 within
// seconds.
func TestDashboard_FleetProbesAndHealth(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 180*time.Second)
	srv := redistest.Start(t)
	backend := []string{"--redis", srv.Addr}
	domains := make([]string, 200)
	for i := range domains {
		domains[i] = fmt.Sprintf("fleet%03d.example.com", i)
	}
	list := mustDomains(t, domains)
	var probes []*proc
	var addrs []string
	for _, id := range []string{"probe-1", "probe-2"} {
		p := startSpyder(t, append([]string{"run", "--domains", list, "--fake-probe", "--fake-probe-delay", "500ms",
			"--concurrency", "2", "--probe", id, "--metrics-addr", "127.0.0.1:0", "--out", t.TempDir() + "/out.jsonl"}, backend...)...)
		probes = append(probes, p)
		addrs = append(addrs, metricsAddr(t, p))
	}
	waitFor(t, 15*time.Second, "both probes in queue stats", func() bool {
		st := liveQueueStats(t, backend...)
		return len(st.Probes) == 2 && st.Probes[0].ID == "probe-1" && st.Probes[1].ID == "probe-2" && st.Probes[0].Done > 0 && st.Probes[1].Done > 0
	})
	text := spyderCmd(t, append([]string{"queue", "stats"}, backend...)...)
	for _, want := range []string{"PROBE", "HOSTS/S", "LAST HEARTBEAT", "probe-1", "probe-2"} {
		if !strings.Contains(text, want) {
			t.Errorf("queue stats --redis lacks %q:\n%s", want, text)
		}
	}
	openDashboard(t, ctx, addrs[0])
	waitFor(t, 15*time.Second, "both probes on the page", func() bool {
		return eval[string](t, ctx, `[...document.querySelectorAll('#probes tbody tr td:first-child')].map(td => td.textContent).join(',')`) == "probe-1,probe-2"
	})
	if !eval[bool](t, ctx, `spyderStatus.fleet`) {
		t.Error("the page does not say it is a fleet")
	}
	browsertest.Screenshot(t, ctx, "dashboard-fleet")

	for _, a := range addrs {
		if code, body := httpGet(t, "http://"+a+"/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz before the loss = %d %q", code, body)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if err := c.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	lost := time.Now()
	for _, a := range addrs {
		waitFor(t, 4*time.Second, "/healthz 503 after the loss", func() bool {
			code, body := httpGet(t, "http://"+a+"/healthz")
			return code == http.StatusServiceUnavailable && strings.Contains(body, "lost its state")
		})
	}
	t.Logf("/healthz of both probes answered 503 %v after FLUSHALL", time.Since(lost).Round(10*time.Millisecond))
	for _, p := range probes {
		p.cmd.Process.Signal(syscall.SIGTERM)
		if err := p.wait(t, 30*time.Second); err != nil {
			t.Errorf("probe after SIGTERM: %v\n%s", err, p.log())
		}
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
