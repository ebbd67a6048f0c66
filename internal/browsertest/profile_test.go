package browsertest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
)

// TestProfileLanguageAndName: the person's page names the person by the
// display name of the stored profile, and the language switch stores the
// language there, so that a reload in a tab that forgot the choice speaks
// it again and whoami says it.
func TestProfileLanguageAndName(t *testing.T) {
	d := startDaemon(t)
	cl := d.as(t, "ada")
	header := http.Header{"Content-Type": {api.MediaJSON}}
	if resp, body, err := cl.Do(d.ctx(t), http.MethodPut, api.PathMe, header, []byte(`{"display_name":"Ada Lovelace","language":"en"}`)); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /api/v1/me: %v %s", err, body)
	}
	tb := openTab(t, d)
	tb.signIn("ada")
	shown := func() string { return eval[string](tb, `document.getElementById("actor").textContent`) }
	if got := shown(); !strings.Contains(got, "Ada Lovelace") {
		t.Errorf("the page names the person %q, want the display name Ada Lovelace", got)
	}
	tb.setLang("de")
	deadline := time.Now().Add(waitTimeout)
	for _, lang := profileOf(t, d, cl); lang != "de"; _, lang = profileOf(t, d, cl) {
		if time.Now().After(deadline) {
			t.Fatalf("whoami does not say the language de %s after the switch", waitTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	eval[bool](tb, `(localStorage.clear(), true)`) // Only the profile remembers the choice now.
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.poll("the profile's language", `document.documentElement.lang === "de"`)
	if got := shown(); !strings.Contains(got, "Ada Lovelace") {
		t.Errorf("after the reload the page names the person %q, want Ada Lovelace", got)
	}
}

// profileOf returns the display name and the language that whoami
// answers for cl.
func profileOf(t *testing.T, d *daemon, cl *client.Client) (name, language string) {
	t.Helper()
	resp, body, err := cl.Do(d.ctx(t), http.MethodGet, api.PathWhoAmI, nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("whoami: %v %s", err, body)
	}
	var who struct {
		DisplayName string `json:"display_name"`
		Language    string `json:"language"`
	}
	if err := json.Unmarshal(body, &who); err != nil {
		t.Fatalf("whoami %s: %v", body, err)
	}
	return who.DisplayName, who.Language
}
