package browsertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// colorSchemes and widths are the states every page is checked in, besides
// its two languages.
var (
	colorSchemes = []string{"light", "dark"}
	widths       = []int64{320, 390, 1440}
)

// setColorScheme makes the tab's page see prefers-color-scheme: scheme.
func (tb *tab) setColorScheme(scheme string) {
	tb.t.Helper()
	tb.do(scheme+" colour scheme", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
}

// setLang switches the person's page to lang ("de" or "en") with its own
// switch, when it speaks the other one.
func (tb *tab) setLang(lang string) {
	tb.t.Helper()
	if eval[string](tb, `document.documentElement.lang`) != lang {
		tb.click("lang")
	}
	if got := eval[string](tb, `document.documentElement.lang`); got != lang {
		tb.t.Fatalf("the page speaks %q after its switch, want %q", got, lang)
	}
}

// checkAxeEverywhere runs axe-core on the person's page as it is, in light
// and dark, German and English, at 320, 390 and 1440 px.
func (tb *tab) checkAxeEverywhere(what string) {
	tb.t.Helper()
	for _, scheme := range colorSchemes {
		tb.setColorScheme(scheme)
		for _, lang := range []string{"en", "de"} {
			tb.setLang(lang)
			for _, width := range widths {
				tb.do("viewport", chromedp.EmulateViewport(width, 900))
				checkAxe(tb.t, tb.ctx, fmt.Sprintf("%s, %s, %s, %d px", what, scheme, lang, width))
			}
		}
	}
	tb.setColorScheme("light")
	tb.setLang("en")
}

// The person's page has no accessibility violation that axe-core finds:
// signed out; signed in with an answer lost ("outcome unclear") and a hold
// in the list; and with the reservation made, in light and dark, German
// and English, at 320, 390 and 1440 px.
func TestPersonPageAccessibility(t *testing.T) {
	needAxe(t)
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openSignedOut()
	tb.checkAxeEverywhere("person page signed out")

	hold := d.holdFor(t, d.socket, 1, 3600)
	tb.signIn("")
	tb.poll("the hold in the list", fmt.Sprintf(`document.getElementById("hold-%s") !== null`, hold))
	tb.leaveUnclear()
	tb.checkAxeEverywhere("person page signed in, outcome unclear")
	tb.click("submit")
	tb.waitStatus("reserved")
	id := reservationID.FindString(tb.form().Receipt)
	tb.poll("the reservation in the list", fmt.Sprintf(`document.getElementById("reservation-%s") !== null`, id))
	tb.checkAxeEverywhere("person page signed in, reserved")
}

// The accessibility check sees violations: on the person's page with an
// image without a text and a line of grey on grey added, axe-core reports
// both, so that the checks above cannot pass by being blind.
func TestAxeSeesViolations(t *testing.T) {
	needAxe(t)
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openSignedOut()
	tb.do("break the page", chromedp.Evaluate[chromedp.Void](`(() => {
		const img = document.createElement("img");
		img.src = "/favicon.svg";
		const p = document.createElement("p");
		p.textContent = "hard to read";
		p.style.cssText = "color: #777; background: #888";
		document.querySelector("main").append(img, p);
	})()`))
	vs, err := axeViolations(tb.ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, v := range vs {
		found[v.ID] = len(v.Nodes) > 0
	}
	if !found["image-alt"] || !found["color-contrast"] {
		t.Errorf("axe-core found %+v, want image-alt and color-contrast with their nodes", vs)
	}
}
