package browsertest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/testskip"
)

// axeScript is axe-core as `npm ci` installs it from axe/package.json and
// axe/package-lock.json (one exact version); .ci/run does that.
const axeScript = "axe/node_modules/axe-core/axe.min.js"

var (
	axeOnce   sync.Once
	axeSource string // axe.min.js, read once.
	axeErr    error  // Why there is no axe-core.
)

// loadAxe reads axe-core once per test binary.
func loadAxe() (string, error) {
	axeOnce.Do(func() {
		b, err := os.ReadFile(axeScript)
		if err != nil {
			axeErr = fmt.Errorf("axe-core is not installed (%w): run `npm ci` in internal/browsertest/axe", err)
			return
		}
		axeSource = string(b)
	})
	return axeSource, axeErr
}

// needAxe skips the test when axe-core is not installed, loudly, and fails
// it in CI (RESERVE_CI set), where a skip must never pass for success. A
// test calls it before starting anything; checkAxe calls it too.
func needAxe(t *testing.T) {
	t.Helper()
	_, err := loadAxe()
	if err == nil {
		return
	}
	if os.Getenv("RESERVE_CI") != "" {
		t.Fatalf("RESERVE_CI is set and the accessibility checks cannot run: %v", err)
	}
	testskip.Missing(t, "axe-core", "the accessibility checks: %v", err)
}

// axeViolation is one rule axe-core found broken, with the nodes that
// break it.
type axeViolation struct {
	ID     string    `json:"id"`
	Impact string    `json:"impact"`
	Help   string    `json:"help"`
	Nodes  []axeNode `json:"nodes"`
}

type axeNode struct {
	Target  string `json:"target"`
	Summary string `json:"summary"`
}

// checkAxe runs axe-core (every rule it has, on the whole document) on the
// page that the chromedp context ctx shows — a tab's, as it is now: its
// language, colour scheme and viewport — and fails t with one error
// listing every violation: rule id, impact, what it asks for, and each
// node's selector with axe's summary. what names the page's state in that
// error ("person page signed in, dark, de, 320 px"). The script goes into
// the page only once per document. checkAxe skips or fails like needAxe
// when axe-core is missing.
func checkAxe(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	needAxe(t)
	vs, err := axeViolations(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(vs) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d accessibility violations (axe-core):", what, len(vs))
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s (%s): %s", v.ID, v.Impact, v.Help)
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "\n    %s — %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " "))
		}
	}
	t.Error(b.String())
}

// axeViolations injects axe-core into the page of ctx (once per document)
// and returns what it finds broken.
func axeViolations(ctx context.Context) ([]axeViolation, error) {
	src, err := loadAxe()
	if err != nil {
		return nil, err
	}
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe !== "undefined"`))
	if err != nil {
		return nil, fmt.Errorf("look for axe-core in the page: %w", err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](src)); err != nil {
			return nil, fmt.Errorf("inject axe-core: %w", err)
		}
	}
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then((r) => r.violations.map((v) => ({
		id: v.id, impact: v.impact || "", help: v.help,
		nodes: v.nodes.map((n) => ({
			target: n.target.map((s) => Array.isArray(s) ? s.join(" >>> ") : s).join(" "),
			summary: n.failureSummary || "",
		})),
	})))`, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("run axe-core: %w", err)
	}
	return vs, nil
}
