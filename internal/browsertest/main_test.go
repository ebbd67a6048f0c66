package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/testskip"
	"github.com/reserve/reserve/internal/tools/testop/testoptest"
)

// reservedBin is the reserved binary built once for this test binary.
var reservedBin string

// browserCtx is the chromedp context of the one browser all tests share
// (each test gets a fresh browser context in it); nil without a browser.
var browserCtx context.Context

// browserErr says why there is no browser.
var browserErr error

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run builds reserved, starts the browser and runs the tests; only TestMain
// exits.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "reserve-browsertest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	reservedBin = filepath.Join(dir, "reserved")
	if out, err := exec.Command("go", "build", "-o", reservedBin, "github.com/reserve/reserve/cmd/reserved").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build reserved: %v\n%s", err, out)
		return 1
	}
	if testopBin, err = testoptest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := startBrowser(filepath.Join(dir, "profile"))
	defer stop()
	if browserErr != nil && os.Getenv("RESERVE_CI") == "" {
		fmt.Fprintf(os.Stderr, "\n*** browsertest: SKIPPING every real-browser test of the form: %v ***\n\n", browserErr)
	}
	return m.Run()
}

// chromiumPath finds the browser: $RESERVE_CHROMIUM, else Debian's chromium
// or another Chrome on PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv("RESERVE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium, chromium-browser or google-chrome on PATH and RESERVE_CHROMIUM is not set (install Debian's chromium package: apt-get install chromium)")
}

// startBrowser starts one headless Chromium with a fresh profile and returns
// the function that stops it. Failing to start is recorded in browserErr.
func startBrowser(profile string) func() {
	path, err := chromiumPath()
	if err != nil {
		browserErr = err
		return func() {}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start.
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", "en-US"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		browserErr = fmt.Errorf("start %s: %w", path, err)
		return func() {}
	}
	browserCtx = ctx
	return func() {
		cancel()
		cancelAlloc()
	}
}

// needBrowser skips the test when there is no browser, loudly, and fails it
// in CI, where a skip must never pass for success.
func needBrowser(t *testing.T) {
	t.Helper()
	if browserCtx != nil {
		return
	}
	if os.Getenv("RESERVE_CI") != "" {
		t.Fatalf("RESERVE_CI is set and the browser tests cannot run: %v", browserErr)
	}
	testskip.Missing(t, "Chromium", "the real-browser tests of the form: %v", browserErr)
}
