// Package browsertest proves the browser form of web/ in a real Chromium:
// its tests start a real reserved process (with fault injection), sign a
// browser in with a login link, drive the page with chromedp and count the
// requests and reservations on the daemon's side. It has no code outside
// its tests.
//
// The tests need Chromium (Debian's chromium package, or $RESERVE_CHROMIUM).
// Without one they skip with a loud message, except in CI (RESERVE_CI=1),
// where a missing browser fails them. The accessibility checks (checkAxe)
// run axe-core, one exact version pinned in axe/package-lock.json and
// installed with `npm ci` in axe/ (.ci/run does it); without it they skip
// loudly, except in CI, where they fail. $RESERVE_SCREENSHOTS, when set,
// names a directory for PNG screenshots of the form.
//
// Nothing may import this package.
package browsertest
