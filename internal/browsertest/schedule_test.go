package browsertest_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/reserve/reserve/internal/api"
)

// putWorkshopJSON creates a workshop as the admin on the socket from a raw
// JSON body, as an organizer's client sends it.
func (d *daemon) putWorkshopJSON(t *testing.T, id, body string) {
	t.Helper()
	resp, answer, err := d.socket.Do(d.ctx(t), http.MethodPut, api.WorkshopPath(id), http.Header{"Content-Type": {"application/json"}}, []byte(body))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("put workshop %s: %v %v %s", id, resp, err, answer)
	}
}

// details is what the page shows of the chosen workshop.
type details struct {
	Shown             bool   `json:"shown"`
	Availability      string `json:"availability"`
	When              string `json:"when"`
	Where             string `json:"where"`
	Registration      string `json:"registration"`
	RegistrationState string `json:"registrationState"`
	Limit             string `json:"limit"`
	Description       string `json:"description"`      // Its text.
	DescriptionLines  int    `json:"descriptionLines"` // The lines it is shown on.
	DescriptionHTML   int    `json:"descriptionHTML"`  // Elements inside it.
}

func (tb *tab) details() details {
	tb.t.Helper()
	return eval[details](tb, `(() => {
		const $ = (id) => document.getElementById(id);
		const shown = (id) => $(id).getClientRects().length > 0 ? $(id).textContent : "";
		const d = $("workshop-description");
		const lines = d.getClientRects().length > 0 ? d.innerText.split("\n").length : 0;
		return {
			shown: $("workshop-details").getClientRects().length > 0, availability: shown("availability"),
			when: shown("workshop-when"), where: shown("workshop-where"),
			registration: shown("workshop-registration"), registrationState: $("workshop-registration").dataset.state || "",
			limit: shown("workshop-limit"), description: shown("workshop-description"),
			descriptionLines: lines, descriptionHTML: d.children.length,
		};
	})()`)
}

// The person's page shows a workshop's schedule: its date and time in the
// workshop's time zone (Berlin), not the browser's (New York), in the
// page's language, its place, its registration and limit per person, and
// its description as text with its line breaks, never as HTML — readable
// and without accessibility violations at 320, 390 and 1440 px. A workshop
// whose registration has not opened says so, and a reservation in it gets
// the daemon's stored registration_not_open refusal; one that would pass
// the limit per person gets limit_reached. A workshop created without
// these members (the demo) shows only its free places, as before.
func TestWorkshopScheduleShown(t *testing.T) {
	d := startDaemon(t)
	d.putWorkshopJSON(t, "summer-school", `{"title": "Summer school", "capacity": 10, "max_quantity": 3,
		"description": "Bring a laptop.\n<b>Not bold</b>, <script>alert(1)</script>\n\nLunch is included.",
		"location": "Room 2.14, Example Street 1, Berlin",
		"starts_at": "2030-03-05T08:00:00Z", "ends_at": "2030-03-05T09:30:00Z", "time_zone": "Europe/Berlin",
		"registration_opens_at": "2020-01-01T00:00:00Z", "max_per_person": 4}`)
	d.putWorkshopJSON(t, "later", `{"title": "Later workshop", "capacity": 10, "max_quantity": 2,
		"starts_at": "2030-06-01T07:00:00Z", "ends_at": "2030-06-01T15:00:00Z", "time_zone": "Europe/Berlin",
		"registration_opens_at": "2029-05-02T07:30:00Z"}`)
	tb := openTab(t, d)
	tb.do("a browser in New York", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"})
		return err
	}))
	tb.signIn("")
	if z := eval[string](tb, `Intl.DateTimeFormat().resolvedOptions().timeZone`); z != "America/New_York" {
		t.Fatalf("the browser's time zone is %s, want America/New_York", z)
	}

	tb.choose("summer-school", 1)
	got := tb.details()
	want := details{Shown: true, Availability: "10 of 10 places free",
		When: "Tue, 5 March 2030, 09:00–10:30 CET", Where: "Room 2.14, Example Street 1, Berlin",
		Registration: "open until Tue, 5 March 2030 at 09:00 CET", RegistrationState: "open", Limit: "at most 4 places",
		Description:      "Bring a laptop.\n<b>Not bold</b>, <script>alert(1)</script>\n\nLunch is included.",
		DescriptionLines: 4, DescriptionHTML: 0}
	if got != want {
		t.Errorf("the summer school shows\n%+v\nwant\n%+v", got, want)
	}
	tb.setLang("de")
	if got := tb.details(); got.When != "Di., 5. März 2030, 09:00–10:30 Uhr MEZ" || got.Registration != "offen bis Di., 5. März 2030 um 09:00 MEZ" ||
		got.Limit != "höchstens 4 Plätze" || got.Availability != "10 von 10 Plätzen frei" {
		t.Errorf("in German the summer school shows %+v", got)
	}
	tb.setLang("en")
	tb.checkFit("summer school")
	tb.checkAxeEverywhere("person page with a workshop's schedule")

	tb.choose(demo, 1)
	if got := tb.details(); got != (details{Availability: "3 of 3 places free"}) {
		t.Errorf("the demo workshop, made without a schedule, shows %+v; want only its free places", got)
	}
	if opt := eval[string](tb, `document.getElementById("workshop").selectedOptions[0].textContent`); opt != "Demo workshop" {
		t.Errorf("the demo workshop's option says %q, want its title", opt)
	}

	tb.choose("later", 2)
	if got := tb.details(); got.RegistrationState != "not_open" || got.Registration != "opens Wed, 2 May 2029 at 09:30 CEST" ||
		got.When != "Sat, 1 June 2030, 09:00–17:00 CEST" || got.Limit != "" || got.Where != "" {
		t.Errorf("the later workshop shows %+v, want its registration not open yet, opening 2 May 2029 at 09:30 CEST", got)
	}
	tb.click("submit")
	tb.waitStatus("registrationNotOpen")
	f := tb.form()
	if f.Status != "Not reserved: registration for Later workshop is not open yet. Nothing was reserved." ||
		f.NewIntentHidden || f.NewIntent != "Change selection" || !f.SubmitHidden {
		t.Errorf("after reserving before registration opened: %+v, want the refusal and only \"Change selection\"", f)
	}
	tb.do("reload", chromedp.Reload())
	tb.waitReady()
	tb.waitStatus("registrationNotOpen")
	tb.setLang("de")
	if s := tb.form().Status; s != "Nicht reserviert: Die Anmeldung für Later workshop ist noch nicht offen. Es wurde nichts reserviert." {
		t.Errorf("the refusal in German: %q", s)
	}
	tb.setLang("en")
	if n := d.reserved(t, "later"); n != 0 {
		t.Errorf("%d places reserved in the later workshop, want 0", n)
	}

	tb.submitNew("summer-school", 3, "reserved")
	tb.submitNew("summer-school", 2, "limitReached")
	if s := tb.form().Status; s != "Not reserved: one person may have at most 4 places in Summer school, and you have 3 places already." {
		t.Errorf("the limit's refusal: %q", s)
	}
	if n := d.reserved(t, "summer-school"); n != 3 {
		t.Errorf("%d places reserved in the summer school, want 3", n)
	}
}
