package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The kinds of subject an actor can be bound to. A subject is what stays
// the same about a caller for as long as the caller exists, whatever it is
// called; its id is unique within its kind.
const (
	// SubjectUID is a Unix socket peer, by its uid in decimal (the kernel's
	// record of who connected), not by its name, which can change.
	SubjectUID = "uid"
)

// Subject names one caller as something stable: a kind (SubjectUID) and an
// id unique within that kind.
type Subject struct {
	Kind string
	ID   string
}

// UIDSubject is the subject of the Unix socket peer uid.
func UIDSubject(uid uint32) Subject {
	return Subject{Kind: SubjectUID, ID: strconv.FormatUint(uint64(uid), 10)}
}

func (s Subject) String() string { return s.Kind + " " + s.ID }

// Binding ties a subject (Kind, Subject) to its actor for the life of the
// database: once stored it never changes and is never removed, no other
// subject gets the same actor, and every later request of the subject acts
// as that actor, so a retry with the same operation key finds its receipt
// whatever has become of the subject's name meanwhile.
type Binding struct {
	Kind      string    `json:"kind"`
	Subject   string    `json:"subject"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
}

// Of returns the subject of b.
func (b Binding) Of() Subject { return Subject{Kind: b.Kind, ID: b.Subject} }

// maxActorLen is the longest actor name (ValidateActor).
const maxActorLen = 41

// ActorOf returns the actor bound to subject. A subject seen for the first
// time is bound first, in a write transaction: to the actor name that
// wanted returns, or, when another subject holds that name, to the first
// of name-2, name-3, … (shortened to fit an actor name) that no subject
// holds, so that no actor name ever moves from one subject to another.
// wanted runs only for a subject that has no binding, outside any
// transaction (it may ask a slow name service); its error is returned as
// it is, and nothing is bound then. Two calls for one new subject, in this
// process or in others on the same store, bind it once and agree on its
// actor. A binding never changes, so the engine remembers the ones it has
// read and asks the store only once per subject.
func (e *Engine) ActorOf(ctx context.Context, subject Subject, wanted func() (string, error)) (string, error) {
	if actor, ok := e.bindings.get(subject); ok {
		return actor, nil
	}
	var b Binding
	found := false
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		b, found, err = tx.Binding(subject.Kind, subject.ID)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("look up the actor of %s: %w", subject, err)
	}
	if !found {
		name, err := wanted()
		if err != nil {
			return "", err
		}
		if err := ValidateActor(name); err != nil {
			return "", fmt.Errorf("bind %s: %w", subject, err)
		}
		err = e.store.Update(ctx, func(tx Tx) error {
			var err error
			b, err = bind(tx, subject, name, e.utcNow)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("bind %s to an actor: %w", subject, err)
		}
	}
	e.bindings.put(subject, b.Actor)
	return b.Actor, nil
}

// bind returns the binding of subject, adding one to the first free name
// of name, name-2, name-3, … when it has none. For a socket peer's uid,
// name itself is free when no subject is bound to it: a store written
// before bindings existed named actors by the name alone, and the uid
// that has that name now takes its history, as it would have before. A
// numbered name is made up, and the name of any other kind of subject
// (an OpenID Connect subject, whose name the person may choose) was never
// its own before bindings, so either is free only when it has no history
// either (no receipt or tombstone, no reservation, no hold): a subject
// that once had that very name (a user "alice-2" of a store written before
// bindings, or an actor an admin's token named) must find its own
// receipts under it, not a stranger who took it. It has no effects outside
// tx.
func bind(tx Tx, subject Subject, name string, clock func() time.Time) (Binding, error) {
	b, ok, err := tx.Binding(subject.Kind, subject.ID)
	if err != nil || ok {
		return b, err
	}
	for n := 1; ; n++ {
		actor := numberedActor(name, n)
		_, taken, err := tx.BindingOfActor(actor)
		if err != nil {
			return Binding{}, err
		}
		if !taken && (n > 1 || subject.Kind != SubjectUID) {
			if taken, err = hasHistory(tx, actor); err != nil {
				return Binding{}, err
			}
		}
		if !taken {
			b = Binding{Kind: subject.Kind, Subject: subject.ID, Actor: actor, CreatedAt: clock()}
			if err := tx.AddBinding(b); err != nil {
				return Binding{}, fmt.Errorf("add binding of %s to %s: %w", subject, actor, err)
			}
			return b, nil
		}
	}
}

// hasHistory reports whether anything is stored under actor: a receipt or
// a tombstone, a reservation or a hold, or a credential (an API token, a
// login code, a browser session) made for it, expired or not: an actor an
// admin named for a token or a login link is that bearer's even before it
// has reserved anything. Each read stops at the first record; credentials
// have no index by actor, so they are all read, once per new binding.
func hasHistory(tx Tx, actor string) (bool, error) {
	if has, err := tx.HasReceiptsOf(actor); err != nil || has {
		return has, err
	}
	found := errors.New("found")
	err := tx.ForEachReservationOf(actor, "", func(Reservation) error { return found })
	if err == nil {
		err = tx.ForEachHoldOf(actor, "", func(Hold) error { return found })
	}
	if err == nil {
		err = tx.ForEachToken(func(r TokenRecord) error {
			if r.Kind != TokenEmailCode && r.Actor == actor {
				return found
			}
			return nil
		})
	}
	if errors.Is(err, found) {
		return true, nil
	}
	return false, err
}

// numberedActor is the n-th candidate actor name of a subject that wants
// name (a valid actor name): name itself, then name-2, name-3, …, with
// name shortened so that the whole stays within maxActorLen. The result is
// a valid actor name.
func numberedActor(name string, n int) string {
	if n == 1 {
		return name
	}
	suffix := "-" + strconv.Itoa(n)
	return name[:min(len(name), maxActorLen-len(suffix))] + suffix
}
