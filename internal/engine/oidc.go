package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// SubjectOIDC is a person signed in through an OpenID Connect provider, by
// the provider's issuer URL and the subject identifier (`sub`) it gives
// the person: the one claim that the provider promises never to change or
// reassign. Names, email addresses and groups can change; they never
// choose the actor.
const SubjectOIDC = "oidc"

// OIDCSubject is the subject of the person whom issuer calls sub. The id is
// the issuer, one space, and sub: an issuer is a URL, which holds no space,
// so the first space ends it and two different pairs never share an id.
func OIDCSubject(issuer, sub string) Subject {
	return Subject{Kind: SubjectOIDC, ID: issuer + " " + sub}
}

// reservedActorPrefixes are the prefixes of the actor names the daemon
// gives Unix socket peers. A name a person chooses at an identity provider
// never starts with one, so no one can pass for a local account.
var reservedActorPrefixes = []string{"unix-", "uid-"}

// hasReservedPrefix reports whether name starts like the actor name of a
// Unix socket peer.
func hasReservedPrefix(name string) bool {
	return slices.ContainsFunc(reservedActorPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// FitActorName makes a name that a person chose elsewhere (an OpenID
// Connect provider's preferred_username) into an actor name: lowercase
// ASCII letters, digits, '_' and '-' stay, any other run of characters
// becomes one '-', leading characters up to the first letter go, and the
// whole is cut to the longest actor name. A name that starts like the
// names of Unix socket peers gets the prefix "oidc-"; what leaves fewer
// than two characters becomes fallback (a valid actor name). The result
// is a valid actor name; ActorOf numbers it when another subject holds it.
func FitActorName(name, fallback string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			if b.Len() == 0 && (r < 'a' || r > 'z') {
				continue
			}
			b.WriteRune(r)
			dash = r == '-'
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	fitted := strings.TrimRight(b.String(), "-")
	if hasReservedPrefix(fitted) {
		fitted = "oidc-" + fitted
	}
	fitted = strings.TrimRight(fitted[:min(len(fitted), maxActorLen)], "-")
	if ValidateActor(fitted) != nil {
		return fallback
	}
	return fitted
}

// SubjectOf returns the binding that holds actor, and false when no
// subject is bound to it (an actor named by an admin's token or login
// link).
func (e *Engine) SubjectOf(ctx context.Context, actor string) (Binding, bool, error) {
	var b Binding
	found := false
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		b, found, err = tx.BindingOfActor(actor)
		return err
	})
	if err != nil {
		return Binding{}, false, fmt.Errorf("look up the subject of %s: %w", actor, err)
	}
	return b, found, nil
}

// SubjectKindOf returns the kind of the subject bound to actor, or "" when
// no subject is.
func (e *Engine) SubjectKindOf(ctx context.Context, actor string) (string, error) {
	b, _, err := e.SubjectOf(ctx, actor)
	return b.Kind, err
}
