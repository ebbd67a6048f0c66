package cli

import (
	"errors"
	"regexp"
	"strings"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
)

// This file is the one place where the words of the request contract
// (JSON members, regular expressions, "integer") become the words of
// reservectl's command line (flags, rules in words, "whole number"): for
// the checks reservectl makes before it sends anything and for the
// refusals of reserved that it prints.

// memberFlags names, for each member of a request body that a flag of
// reservectl sets, that flag.
var memberFlags = map[string]string{
	"workshop":               "--workshop",
	"quantity":               "--quantity",
	"ttl_seconds":            "--ttl (in seconds)",
	"capacity":               "--capacity",
	"max_quantity":           "--max-quantity",
	"title":                  "--title",
	"actor":                  "--actor",
	"expires_in_seconds":     "--expires-in (in seconds)",
	"description":            "--description",
	"location":               "--location",
	"time_zone":              "--time-zone",
	"starts_at":              "--starts",
	"ends_at":                "--ends",
	"registration_opens_at":  "--registration-opens",
	"registration_closes_at": "--registration-closes",
	"max_per_person":         "--max-per-person",
	"url":                    "URL",
	"event_types":            "--event-type",
}

// workshopIDRule and actorRule say engine.ValidateWorkshopID's and
// engine.ValidateActor's rules in words.
const (
	workshopIDRule = "2 to 41 characters: a lowercase letter, then lowercase letters, digits and '-'"
	actorRule      = "2 to 41 characters: a lowercase letter, then lowercase letters, digits, '-' and '_'"
)

// contractPhrases turns the phrases of the request contract's refusals
// into words; the longest come first, so that each is replaced whole.
var contractPhrases = strings.NewReplacer(
	`: actor names must match ^[a-z][a-z0-9_-]{1,40}$, got `, ` must be `+actorRule+`, not `,
	`actor names must match ^[a-z][a-z0-9_-]{1,40}$, got `, `must be `+actorRule+`, not `,
	`must match ^[a-z][a-z0-9-]{1,40}$, got `, `must be `+workshopIDRule+`, not `,
	`must be an integer from `, `must be a whole number from `,
	`must be after "starts_at"`, `must be after --starts`,
	`needs "starts_at"`, `needs --starts`,
)

// memberName finds the name of a member in a refusal.
var memberName = regexp.MustCompile(`member "([a-z_]+)"`)

// inFlagWords says msg, a refusal of the request contract, in the words of
// the command line: each member that a flag sets as that flag, and each
// rule in words. Members that no flag sets keep their names.
func inFlagWords(msg string) string {
	msg = memberName.ReplaceAllStringFunc(msg, func(m string) string {
		if flag, ok := memberFlags[memberName.FindStringSubmatch(m)[1]]; ok {
			return flag
		}
		return m
	})
	return contractPhrases.Replace(msg)
}

// reworded returns text, a line that reports err, with the message of the
// refusal in err's chain (from reserved, or from a check before sending)
// in flag words. A state file's refusal keeps its members' names: they
// are the file's, not flags.
func reworded(err error, text string) string {
	var ee *engine.Error
	if !errors.As(err, &ee) || errors.Is(err, intent.ErrCorrupt) || ee.Message == "" {
		return text
	}
	return strings.ReplaceAll(text, ee.Message, inFlagWords(ee.Message))
}

// checkRequest refuses, before anything is sent, the workshop and
// quantity of req that the request contract refuses, in flag words.
func checkRequest(req engine.Request) error {
	if err := req.Validate(); err != nil {
		return usageErrorf("nothing sent: %s", inFlagWords(engine.ErrorMessage(err)))
	}
	return nil
}

// flagError is the usage error of a value of flag (or argument) that
// check refused with err, whose text completes a sentence about it.
func flagError(flag string, err error) error {
	return usageErrorf("nothing sent: %s %s", flag, inFlagWords(err.Error()))
}
