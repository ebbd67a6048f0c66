package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Profile is what a person chose to be shown as and written to: the name
// the pages show in place of the actor name, and the language of the
// pages and of the mails sent to the person. It never chooses the actor
// and grants nothing. An actor without a stored profile has the zero
// Profile: no display name, no language chosen.
type Profile struct {
	Actor string `json:"actor"`
	// DisplayName is at most MaxDisplayNameLen printable characters, or
	// "" for none.
	DisplayName string `json:"display_name,omitempty"`
	// Language is one of Languages, or "" when none was chosen.
	Language string `json:"language,omitempty"`
	// Email is the address an identity provider said, verified, is the
	// person's, kept at sign-in so that mails reach a person who signs
	// in with a provider; "" for none. (A person who signs in by email
	// gets mails at the address they are bound to.)
	Email string `json:"email,omitempty"`
}

// MaxDisplayNameLen is the longest display name, in characters.
const MaxDisplayNameLen = 100

// Languages are the languages of the pages and mails, as a person may
// choose them.
var Languages = []string{"en", "de"}

// ProfileChange is a change of a profile: each member that is not nil
// replaces the stored one ("" removes it); the others stay.
type ProfileChange struct {
	DisplayName *string
	Language    *string
}

// Validate checks p's members, each refusal a CodeRequestContract that
// names the member as the request body spells it.
func (p Profile) Validate() error {
	if err := ValidateActor(p.Actor); err != nil {
		return Errorf(CodeRequestContract, "%v", err)
	}
	if err := validateDisplayName(p.DisplayName); err != nil {
		return err
	}
	if p.Language != "" && !slices.Contains(Languages, p.Language) {
		return Errorf(CodeRequestContract, "member \"language\" must be one of %s, or \"\" for none: %q is not",
			strings.Join(Languages, ", "), Truncate(p.Language, 20))
	}
	if p.Email != "" {
		if norm, err := NormalizeEmail(p.Email); err != nil || norm != p.Email {
			return Errorf(CodeRequestContract, "member \"email\" must be a lowercase email address: %q is not", Truncate(p.Email, 80))
		}
	}
	return nil
}

func validateDisplayName(name string) error {
	bad := func(why string) error {
		return Errorf(CodeRequestContract, "member \"display_name\" must be at most %d printable characters: %s", MaxDisplayNameLen, why)
	}
	if !utf8.ValidString(name) {
		return bad("it is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxDisplayNameLen {
		return bad(fmt.Sprintf("it has %d", n))
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return bad(fmt.Sprintf("it holds %U", r))
		}
	}
	return nil
}

// FitDisplayName makes a name that a person gave elsewhere (an OpenID
// Connect provider's name claim) into a display name: every run of
// characters that are not printable becomes one space, the ends lose
// their spaces, and the whole is cut to MaxDisplayNameLen characters.
func FitDisplayName(name string) string {
	name = strings.ToValidUTF8(name, " ")
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }), " ")
	if utf8.RuneCountInString(name) > MaxDisplayNameLen {
		name = strings.TrimSpace(string([]rune(name)[:MaxDisplayNameLen]))
	}
	return name
}

// ProfileOf returns the stored profile of actor, the zero Profile (with
// the actor) when none is stored.
func (e *Engine) ProfileOf(ctx context.Context, actor string) (Profile, error) {
	var p Profile
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		p, err = profileOf(tx, actor)
		return err
	})
	if err != nil {
		return Profile{}, fmt.Errorf("read the profile of %s: %w", actor, err)
	}
	return p, nil
}

func profileOf(tx Tx, actor string) (Profile, error) {
	p, ok, err := tx.Profile(actor)
	if err != nil || !ok {
		return Profile{Actor: actor}, err
	}
	return p, nil
}

// ChangeProfile applies change to the profile of actor and returns the
// profile as stored. A change that breaks a rule of Profile is refused
// with CodeRequestContract, and nothing is stored.
func (e *Engine) ChangeProfile(ctx context.Context, actor string, change ProfileChange) (Profile, error) {
	if err := ValidateActor(actor); err != nil {
		return Profile{}, Errorf(CodeRequestContract, "%v", err)
	}
	check := Profile{Actor: actor}
	if change.DisplayName != nil {
		check.DisplayName = *change.DisplayName
	}
	if change.Language != nil {
		check.Language = *change.Language
	}
	if err := check.Validate(); err != nil {
		return Profile{}, err
	}
	var p Profile
	err := e.store.Update(ctx, func(tx Tx) error {
		var err error
		if p, err = profileOf(tx, actor); err != nil {
			return err
		}
		if change.DisplayName != nil {
			p.DisplayName = *change.DisplayName
		}
		if change.Language != nil {
			p.Language = *change.Language
		}
		return tx.PutProfile(p)
	})
	if err != nil {
		return Profile{}, fmt.Errorf("change the profile of %s: %w", actor, err)
	}
	return p, nil
}

// FillDisplayName stores name (made to fit by FitDisplayName) as the
// display name of actor when its profile has none: a name an identity
// provider gives fills an empty display name, and a name the person chose
// stays. It writes nothing when the profile has a display name already or
// when name fits to "".
func (e *Engine) FillDisplayName(ctx context.Context, actor, name string) error {
	name = FitDisplayName(name)
	if name == "" {
		return nil
	}
	if p, err := e.ProfileOf(ctx, actor); err != nil || p.DisplayName != "" {
		return err
	}
	err := e.store.Update(ctx, func(tx Tx) error {
		p, err := profileOf(tx, actor)
		if err != nil || p.DisplayName != "" {
			return err
		}
		p.DisplayName = name
		return tx.PutProfile(p)
	})
	if err != nil {
		return fmt.Errorf("fill the display name of %s: %w", actor, err)
	}
	return nil
}

// KeepVerifiedEmail stores addr, an address an identity provider said is
// verified, as the address of actor's mails (Profile.Email), when it
// differs from the one stored. An address that does not normalize is not
// stored, and not an error: the provider's claim is not the person's
// request.
func (e *Engine) KeepVerifiedEmail(ctx context.Context, actor, addr string) error {
	addr, err := NormalizeEmail(addr)
	if err != nil {
		return nil
	}
	if p, err := e.ProfileOf(ctx, actor); err != nil || p.Email == addr {
		return err
	}
	err = e.store.Update(ctx, func(tx Tx) error {
		p, err := profileOf(tx, actor)
		if err != nil || p.Email == addr {
			return err
		}
		p.Email = addr
		return tx.PutProfile(p)
	})
	if err != nil {
		return fmt.Errorf("keep the address of %s: %w", actor, err)
	}
	return nil
}
