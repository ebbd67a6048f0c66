package boltstore

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// The bindings of subjects to actors (schema version 6): each binding as
// JSON under kind 0x00 subject, and the index of the bound actors, each
// actor's key holding the kind 0x00 subject of its binding, which makes
// the lookup by actor one read and keeps an actor from being bound twice.
var (
	bucketBindings        = []byte("bindings")
	bucketBindingsByActor = []byte("bindings_by_actor")
)

// upgradeTo6 brings a file of schema version 5 to version 6, in the
// transaction that records the new version: it adds the (empty) buckets of
// the bindings. No earlier record changes: every actor named in the file
// keeps its receipts, and a subject's first request after the upgrade
// binds it to the actor name it resolves to then.
func upgradeTo6(tx *bolt.Tx, path string) error {
	for _, name := range [][]byte{bucketBindings, bucketBindingsByActor} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("upgrade %s to schema 6: create bucket %s: %w", path, name, err)
		}
	}
	return nil
}

// bindingKey is kind 0x00 subject; a kind never holds 0x00.
func bindingKey(kind, subject string) []byte {
	k := make([]byte, 0, len(kind)+1+len(subject))
	k = append(k, kind...)
	k = append(k, 0)
	return append(k, subject...)
}

func (t *tx) Binding(kind, subject string) (engine.Binding, bool, error) {
	var b engine.Binding
	ok, err := t.get(bucketBindings, bindingKey(kind, subject), &b)
	return b, ok, err
}

// BindingOfActor reads the binding the index names for actor; an index
// entry without its binding is an error, never an unbound actor.
func (t *tx) BindingOfActor(actor string) (engine.Binding, bool, error) {
	idx := t.read(bucketBindingsByActor)
	if idx == nil {
		return engine.Binding{}, false, nil
	}
	k := idx.Get([]byte(actor))
	if k == nil {
		return engine.Binding{}, false, nil
	}
	var b engine.Binding
	ok, err := t.get(bucketBindings, k, &b)
	if err == nil && (!ok || b.Actor != actor) {
		err = fmt.Errorf("the index of bound actors names %q for actor %s, which is not its binding", k, actor)
	}
	return b, err == nil, err
}

// AddBinding writes the binding and its index entry, and refuses a bound
// subject or a bound actor.
func (t *tx) AddBinding(b engine.Binding) error {
	k := bindingKey(b.Kind, b.Subject)
	if old := t.bucket(bucketBindings).Get(k); old != nil {
		return fmt.Errorf("%s is bound already (%s)", b.Of(), old)
	}
	if old := t.bucket(bucketBindingsByActor).Get([]byte(b.Actor)); old != nil {
		return fmt.Errorf("actor %s is bound already (to %q)", b.Actor, old)
	}
	if err := t.putRaw(bucketBindingsByActor, []byte(b.Actor), k); err != nil {
		return err
	}
	return t.put(bucketBindings, k, b)
}

func (t *tx) ForEachBinding(fn func(engine.Binding) error) error {
	return forEach(t, bucketBindings, fn)
}

// verifyBindingIndex reports index entries of bound actors that do not
// name a binding of that actor under its own key; the engine's check
// finds bindings that the index misses.
func verifyBindingIndex(t *tx) ([]engine.Finding, error) {
	idx := t.read(bucketBindingsByActor)
	if idx == nil {
		return nil, nil
	}
	var findings []engine.Finding
	err := idx.ForEach(func(actor, k []byte) error {
		var b engine.Binding
		ok, err := t.get(bucketBindings, k, &b)
		if err != nil {
			return err
		}
		if !ok || b.Actor != string(actor) || !bytes.Equal(bindingKey(b.Kind, b.Subject), k) {
			findings = append(findings, engine.Finding{Kind: engine.FindingBinding,
				Detail: fmt.Sprintf("the index of bound actors names %q for actor %s, which is not a binding of that actor", k, actor)})
		}
		return nil
	})
	return findings, err
}
