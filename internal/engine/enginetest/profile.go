package enginetest

import (
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
)

// testProfileRoundTrip: an actor without a stored profile has the empty
// one; a change stores its members and keeps the others; a fresh engine
// on the store reads the profile back (it is stored, not remembered); a
// provider's name fills only an empty display name.
func testProfileRoundTrip(t *testing.T, h *harness) {
	p, err := h.eng.ProfileOf(h.ctx, "ada")
	if err != nil || p != (engine.Profile{Actor: "ada"}) {
		t.Fatalf("ProfileOf(ada) before any change = %+v, %v; want the empty profile", p, err)
	}
	if err := h.eng.FillDisplayName(h.ctx, "ada", "  Ada\tLovelace\x00 "); err != nil {
		t.Fatal(err)
	}
	lang := "de"
	p, err = h.eng.ChangeProfile(h.ctx, "ada", engine.ProfileChange{Language: &lang})
	want := engine.Profile{Actor: "ada", DisplayName: "Ada Lovelace", Language: "de"}
	if err != nil || p != want {
		t.Fatalf("ChangeProfile(language de) = %+v, %v; want %+v", p, err, want)
	}
	chosen := "Gräfin Ada 🧮"
	if p, err = h.eng.ChangeProfile(h.ctx, "ada", engine.ProfileChange{DisplayName: &chosen}); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.FillDisplayName(h.ctx, "ada", "Provider Name"); err != nil {
		t.Fatal(err)
	}
	want = engine.Profile{Actor: "ada", DisplayName: chosen, Language: "de"}
	if got, err := h.engineOn(h.store).ProfileOf(h.ctx, "ada"); err != nil || got != want || p != want {
		t.Fatalf("profile read by a fresh engine = %+v, %v (answered %+v); want %+v", got, err, p, want)
	}
	if got, err := h.eng.ProfileOf(h.ctx, "bob"); err != nil || got != (engine.Profile{Actor: "bob"}) {
		t.Errorf("another actor's profile = %+v, %v; want the empty one", got, err)
	}
	empty := ""
	if p, err = h.eng.ChangeProfile(h.ctx, "ada", engine.ProfileChange{DisplayName: &empty, Language: &empty}); err != nil || p != (engine.Profile{Actor: "ada"}) {
		t.Errorf("emptied profile = %+v, %v", p, err)
	}
	long := strings.Repeat("é", engine.MaxDisplayNameLen+5)
	if err := h.eng.FillDisplayName(h.ctx, "ada", long); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.eng.ProfileOf(h.ctx, "ada"); got.DisplayName != long[:2*engine.MaxDisplayNameLen] {
		t.Errorf("a provider's long name is stored as %q, want it cut to %d characters", got.DisplayName, engine.MaxDisplayNameLen)
	}
}

// testProfileValidation: a display name that is too long or holds a
// character that is not printable, and a language that is not offered,
// are refused naming the member, and nothing is stored.
func testProfileValidation(t *testing.T, h *harness) {
	lang := "en"
	if _, err := h.eng.ChangeProfile(h.ctx, "ada", engine.ProfileChange{Language: &lang}); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		change engine.ProfileChange
		member string
	}{
		{engine.ProfileChange{DisplayName: str(strings.Repeat("a", engine.MaxDisplayNameLen+1))}, `"display_name"`},
		{engine.ProfileChange{DisplayName: str("Ada\nLovelace")}, `"display_name"`},
		{engine.ProfileChange{DisplayName: str("Ada\u200b")}, `"display_name"`},
		{engine.ProfileChange{DisplayName: str("\xff")}, `"display_name"`},
		{engine.ProfileChange{DisplayName: str("Ada"), Language: str("fr")}, `"language"`},
		{engine.ProfileChange{Language: str("EN")}, `"language"`},
	} {
		_, err := h.eng.ChangeProfile(h.ctx, "ada", tc.change)
		wantCode(t, err, engine.CodeRequestContract)
		if err == nil || !strings.Contains(err.Error(), tc.member) {
			t.Errorf("ChangeProfile(%+v) = %v, want an error naming %s", tc.change, err, tc.member)
		}
	}
	if _, err := h.eng.ChangeProfile(h.ctx, "Not An Actor", engine.ProfileChange{Language: &lang}); err == nil {
		t.Error("ChangeProfile of an invalid actor name succeeded")
	}
	if got, err := h.eng.ProfileOf(h.ctx, "ada"); err != nil || got != (engine.Profile{Actor: "ada", Language: "en"}) {
		t.Errorf("profile after the refusals = %+v, %v; want it unchanged", got, err)
	}
	ok := strings.Repeat("ß", engine.MaxDisplayNameLen)
	if _, err := h.eng.ChangeProfile(h.ctx, "ada", engine.ProfileChange{DisplayName: &ok}); err != nil {
		t.Errorf("a display name of %d characters is refused: %v", engine.MaxDisplayNameLen, err)
	}
}
