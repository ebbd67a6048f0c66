package browsertest_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// selectArrow is the width a select's own arrow may take from its content
// box: a generous bound, so that text that fits next to it is never cut.
const selectArrow = 32

// fitProblems returns, for the page as it is, every visible element that
// reaches past the window's right edge or cuts its own content off
// (scrollWidth past clientWidth), every select whose chosen option's text
// is wider than the room beside its arrow, every header control whose
// text wraps onto a second line, and "Sign out" on another line than the
// language switch.
func (tb *tab) fitProblems() []string {
	tb.t.Helper()
	return eval[[]string](tb, fmt.Sprintf(`(() => {
		const out = [];
		const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : "");
		const vw = document.documentElement.clientWidth;
		for (const el of document.querySelectorAll("body *")) {
			const rects = el.getClientRects();
			if (rects.length === 0 || el.closest(".visually-hidden")) continue;
			const r = el.getBoundingClientRect();
			if (r.right > vw + 0.5) out.push(name(el) + " reaches " + Math.round(r.right) + " px, past the window's " + vw);
			const style = getComputedStyle(el);
			if (el.tagName !== "PRE" && style.overflowX !== "visible" && el.scrollWidth > el.clientWidth + 1) {
				out.push(name(el) + " cuts its content: " + el.scrollWidth + " px in " + el.clientWidth);
			}
		}
		const canvas = document.createElement("canvas").getContext("2d");
		for (const sel of document.querySelectorAll("select")) {
			if (sel.getClientRects().length === 0 || sel.selectedIndex < 0) continue;
			const style = getComputedStyle(sel);
			canvas.font = style.font;
			const text = sel.options[sel.selectedIndex].text;
			const room = sel.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - %d;
			const width = canvas.measureText(text).width;
			if (width > room) out.push(name(sel) + " cuts " + JSON.stringify(text) + ": " + Math.round(width) + " px in " + Math.round(room));
		}
		for (const el of document.querySelectorAll("header button, header a, header h1")) {
			if (el.getClientRects().length === 0) continue;
			const range = document.createRange();
			range.selectNodeContents(el);
			const lines = new Set([...range.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top))).size;
			if (lines > 1) out.push(name(el) + " wraps " + JSON.stringify(el.textContent) + " onto " + lines + " lines");
		}
		const lang = document.getElementById("lang"), signOut = document.getElementById("sign-out");
		if (lang.getClientRects().length > 0 && signOut.getClientRects().length > 0 &&
			Math.abs(lang.getBoundingClientRect().top - signOut.getBoundingClientRect().top) > 1) {
			out.push("#sign-out breaks away from #lang onto a line of its own");
		}
		return out;
	})()`, selectArrow))
}

// checkFit fails the test with fitProblems at 320, 390 and 1440 px, in
// English and German.
func (tb *tab) checkFit(state string) {
	tb.t.Helper()
	for _, lang := range []string{"en", "de"} {
		tb.setLang(lang)
		for _, width := range widths {
			tb.do("viewport", chromedp.EmulateViewport(width, 900))
			for _, p := range tb.fitProblems() {
				tb.t.Errorf("%s, %s, %d px: %s", state, lang, width, p)
			}
		}
	}
	tb.setLang("en")
}

// Nothing on the person's page is cut off or reaches past the window, the
// chosen workshop's text fits its select, and the header's controls
// ("Sign out", the language switch) stay on one line, at 320, 390 and 1440
// px, in English and German, signed out, signed in and after a
// reservation.
func TestNothingClippedOrWrapped(t *testing.T) {
	d := startDaemon(t)
	tb := openTab(t, d)
	tb.openSignedOut()
	tb.checkFit("signed out")
	tb.signIn("")
	tb.checkFit("signed in")
	tb.reserve(2)
	tb.checkFit("reserved")
}
