// Package browsertest drives a real headless Chromium (Debian's chromium
// package) for tests of the pages spyder serves and writes. A test gets a
// browser context with [New], acts on it with chromedp (chromedp.Do for
// steps, chromedp.Run for one value), and keeps what it saw with
// [Screenshot].
//
// Chromium is started with the flags a closed machine needs: no background
// networking, no component updates, no sync, a fresh profile, and no sandbox
// when running as root. Without them it spends its start on lookups of
// Google's hosts that this network refuses.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path returns the Chromium executable, or "" when none is installed.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless Chromium for t and returns a context to run
// chromedp actions in; the browser is closed when t ends. Without Chromium
// the test fails when SPYDER_REQUIRE_BROWSER (as `make test` sets it) or CI
// is set, and is skipped otherwise.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	exe := Path()
	if exe == "" {
		if os.Getenv("SPYDER_REQUIRE_BROWSER") != "" || os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed (make deps installs it)")
		}
		t.Skip("chromium is not installed")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(func() { cancel(); cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Screenshot writes a full-page PNG of the page in ctx as name.png under
// the artifacts directory (SPYDER_ARTIFACTS, or artifacts/ at the module
// root), so that a person can look at what the test saw, and logs its path.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG; below it, chromedp captures JPEG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := ArtifactsDir(t)
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// ArtifactsDir returns (creating it) the directory tests keep what they
// saw in: SPYDER_ARTIFACTS when set, artifacts/ at the module root else.
func ArtifactsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SPYDER_ARTIFACTS")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	return dir
}
