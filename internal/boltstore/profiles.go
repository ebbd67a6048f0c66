package boltstore

import (
	"github.com/reserve/reserve/internal/engine"
)

// The profiles of actors (schema version 9): each profile as JSON under
// its actor name. A file of an earlier version gets the (empty) bucket when
// it is opened for writing; until then, every actor reads as having no
// profile.
var bucketProfiles = []byte("profiles")

func (t *tx) Profile(actor string) (engine.Profile, bool, error) {
	var p engine.Profile
	ok, err := t.get(bucketProfiles, []byte(actor), &p)
	return p, ok, err
}

func (t *tx) PutProfile(p engine.Profile) error {
	return t.put(bucketProfiles, []byte(p.Actor), p)
}

func (t *tx) ForEachProfile(fn func(engine.Profile) error) error {
	return forEach(t, bucketProfiles, fn)
}
