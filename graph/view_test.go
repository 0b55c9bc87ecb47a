package graph

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/spyder-crawler/spyder/graph/graphtest"
	"github.com/spyder-crawler/spyder/internal/browsertest"
)

// writeView writes the view of names with opts to a temporary HTML file.
func writeView(t *testing.T, names []string, opts ViewOptions) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "view.html")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := View(&Reader{}, names, opts, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadView opens the page at path in a fresh headless Chromium. When the
// test ends it fails if the page asked the network for anything but
// itself or a script threw.
func loadView(t *testing.T, path string) context.Context {
	t.Helper()
	ctx := browsertest.New(t, 120*time.Second)
	url := "file://" + path
	var mu sync.Mutex
	var requests, errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *runtime.EventExceptionThrown:
			errs = append(errs, ev.ExceptionDetails.Text+" "+fmt.Sprint(ev.ExceptionDetails.Exception))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(requests) == 0 {
			t.Error("saw no request at all, not even the page's own: network events were not recorded")
		}
		for _, u := range requests {
			if u != url {
				t.Errorf("the page made a network request: %s", u)
			}
		}
		if len(errs) > 0 {
			t.Errorf("script errors: %v", errs)
		}
	})
	return ctx
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func poll(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// The whole graph is drawn (every node painted on the canvas), with a
// legend; search finds a host and selects it; nothing is fetched.
func TestView_WholeGraphDrawsAndSearches(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 300})
	m := loadModel(t, batch)
	ctx := loadView(t, writeView(t, []string{batch}, ViewOptions{MaxNodes: 2000}))
	want := m.nodeCount()
	poll(t, ctx, fmt.Sprintf("window.spyderView && spyderView.drawnCount() === %d", want))
	if got := eval[int](t, ctx, "spyderView.graph.graphData().links.length"); got != len(m.edges) {
		t.Errorf("%d links in the layout, want %d", got, len(m.edges))
	}
	legend := eval[string](t, ctx, "document.getElementById('legend').textContent")
	for typ, ids := range m.nodes {
		if w := fmt.Sprintf("%s (%d)", typ, len(ids)); !strings.Contains(legend, w) {
			t.Errorf("legend %q lacks %q", legend, w)
		}
	}
	if note := eval[string](t, ctx, "document.getElementById('note').textContent"); note != "" {
		t.Errorf("note %q on a graph that fits", note)
	}
	eval[bool](t, ctx, "document.getElementById('search').focus(), true")
	if err := chromedp.Do(ctx, chromedp.KeyEvent("H42.EXAMPLE10.COM\r")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "spyderView.selected() === 'h42.example10.com'")
	details := eval[string](t, ctx, "document.getElementById('details').textContent")
	if !strings.Contains(details, "h42.example10.com") || !strings.Contains(details, "example10.com") {
		t.Errorf("details after search: %q", details)
	}
	browsertest.Screenshot(t, ctx, "graph-view-whole")
}

// Past --max-nodes the page says so.
func TestView_SaysWhenCut(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 300})
	m := loadModel(t, batch)
	ctx := loadView(t, writeView(t, []string{batch}, ViewOptions{MaxNodes: 50}))
	poll(t, ctx, "window.spyderView && spyderView.drawnCount() === 50")
	note := eval[string](t, ctx, "document.getElementById('note').textContent")
	if w := fmt.Sprintf("The graph has %d nodes; this page shows the first 50", m.nodeCount()); !strings.Contains(note, w) {
		t.Errorf("note %q lacks %q", note, w)
	}
}

// A host's neighbourhood shows its hops at first; a click on a node with
// hidden neighbours (a real mouse click on the canvas) shows them.
func TestView_HostNeighbourhoodExpandsOnClick(t *testing.T) {
	batch := synthFile(t, "batch.jsonl", graphtest.Options{Hosts: 400})
	ctx := loadView(t, writeView(t, []string{batch}, ViewOptions{MaxNodes: 2000, Host: "h7.example1.com", Depth: 1}))
	poll(t, ctx, "window.spyderView && spyderView.settled()")
	// h7 uses the name server ns1.dns7.net, as do h107, h207 and h307: two
	// hops from h7, in the page but hidden.
	const ns, far = "ns1.dns7.net", "h107.example26.com"
	if !eval[bool](t, ctx, fmt.Sprintf("spyderView.isShown(%q) && !spyderView.isShown(%q)", ns, far)) {
		t.Fatalf("at depth 1, want %s shown and %s hidden", ns, far)
	}
	before := eval[int](t, ctx, "spyderView.shownCount()")
	browsertest.Screenshot(t, ctx, "graph-view-host-before")
	xy := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
		const g = spyderView.graph, n = g.graphData().nodes.find(n => n.id === %q);
		g.centerAt(n.x, n.y); g.zoom(3);
		const p = g.graph2ScreenCoords(n.x, n.y);
		return [p.x, p.y];
	})()`, ns))
	// force-graph finds the node under the pointer on a hidden canvas that
	// it repaints at most every 800 ms, and as the pointer moves: wait for
	// the repaint, then move onto the node and click, as a person would.
	if err := chromedp.Do(ctx, chromedp.Sleep(1500*time.Millisecond),
		chromedp.MouseEvent(chromedp.MouseMoved, xy[0]-5, xy[1]-5), chromedp.MouseEvent(chromedp.MouseMoved, xy[0], xy[1]),
		chromedp.Sleep(300*time.Millisecond), chromedp.MouseClickXY(xy[0], xy[1])); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, fmt.Sprintf("spyderView.selected() === %q", ns))
	poll(t, ctx, fmt.Sprintf("spyderView.isShown(%q)", far))
	if after := eval[int](t, ctx, "spyderView.shownCount()"); after <= before {
		t.Errorf("shown nodes %d after the click, %d before", after, before)
	}
	browsertest.Screenshot(t, ctx, "graph-view-host-expanded")
}
