package browsertest_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spyder-crawler/spyder/internal/browsertest"
)

// TestBrowser_RunsScriptAndScreenshots checks the harness itself: Chromium
// loads a local page, runs its script (the title is set by JavaScript, so a
// browser that did not run it fails), and a screenshot is kept.
func TestBrowser_RunsScriptAndScreenshots(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><p id=p>static</p><script>document.getElementById('p').textContent='ran '+(6*7)</script>`)
	}))
	defer srv.Close()
	ctx := browsertest.New(t, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#p"))
	if err != nil {
		t.Fatal(err)
	}
	if text != "ran 42" {
		t.Fatalf("page text %q, want the script's %q", text, "ran 42")
	}
	path := browsertest.Screenshot(t, ctx, "browsertest")
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 100 {
		t.Fatalf("screenshot %s: %v (%d bytes)", path, err, len(data))
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", path, err)
	}
}
