package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// TestContractRefusalsInFlagWords feeds the request contract's own
// refusals, as the engine words them today, through inFlagWords: none may
// keep a member's name or a regular expression. A change of the engine's
// wording that the table no longer covers fails here.
func TestContractRefusalsInFlagWords(t *testing.T) {
	refusals := map[string]error{
		"--workshop must be 2 to 41":                             engine.Request{Workshop: "Pottery", Quantity: 1}.Validate(),
		"--quantity must be a whole number from 1 to 1000000000": engine.Request{Workshop: "pottery", Quantity: 0}.Validate(),
		"--ttl (in seconds) must be a whole number from 30 to":   engine.HoldRequest{Workshop: "pottery", Quantity: 1, TTLSeconds: 1}.Validate(),
	}
	for want, err := range refusals {
		if err == nil {
			t.Fatalf("the engine accepts the request that should say %q", want)
		}
		got := inFlagWords(engine.ErrorMessage(err))
		if !strings.HasPrefix(got, want) || strings.Contains(got, "member") || strings.Contains(got, "^") {
			t.Errorf("inFlagWords(%q) = %q, want it to start with %q, without members or patterns", engine.ErrorMessage(err), got, want)
		}
	}
	for id, err := range map[string]error{"workshop": engine.ValidateWorkshopID("Pottery"), "actor": engine.ValidateActor("Bob")} {
		got := inFlagWords(err.Error())
		if strings.Contains(got, "^") || !strings.Contains(got, "must be 2 to 41 characters") {
			t.Errorf("the %s rule %q reads %q in words", id, err, got)
		}
	}
}

// TestIDRulesInWordsMatchTheEngine checks the words of workshopIDRule and
// actorRule against the engine's checks at every edge they name.
func TestIDRulesInWordsMatchTheEngine(t *testing.T) {
	long := "a" + strings.Repeat("b", 40)
	for _, c := range []struct {
		id             string
		workshop, user bool
	}{
		{"ab", true, true},         // 2 characters
		{long, true, true},         // 41 characters
		{"a", false, false},        // 1 character
		{long + "c", false, false}, // 42 characters
		{"a-9", true, true},        // letters, digits and '-'
		{"a_b", false, true},       // '_' only in actors
		{"9a", false, false},       // a letter first
		{"-a", false, false},       // a letter first
		{"aB", false, false},       // lowercase
		{"a.b", false, false},      // nothing else
	} {
		if got := engine.ValidateWorkshopID(c.id) == nil; got != c.workshop {
			t.Errorf("workshop id %q accepted = %v; %q says %v", c.id, got, workshopIDRule, c.workshop)
		}
		if got := engine.ValidateActor(c.id) == nil; got != c.user {
			t.Errorf("actor %q accepted = %v; %q says %v", c.id, got, actorRule, c.user)
		}
	}
}

// TestRewordedKeepsAStateFilesMembers puts a refusal of reserved in flag
// words, but leaves the same refusal inside a corrupt state file's error as
// it is: its members are the file's, not flags.
func TestRewordedKeepsAStateFilesMembers(t *testing.T) {
	ee := engine.Errorf(engine.CodeRequestContract, `member "quantity" must be an integer from 1 to 9`)
	if got := reworded(ee, ee.Error()); got != `request_contract: --quantity must be a whole number from 1 to 9` {
		t.Errorf("reworded refusal = %q", got)
	}
	corrupt := &intent.CorruptError{Path: "intent.json", Err: fmt.Errorf("payload: %w", ee)}
	if got := reworded(corrupt, corrupt.Error()); got != corrupt.Error() {
		t.Errorf("reworded state file error = %q, want it unchanged: %q", got, corrupt.Error())
	}
}
