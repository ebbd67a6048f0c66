package delivery

import (
	"context"

	"github.com/reserve/reserve/internal/engine"
)

// Waker wakes a dispatcher before its next poll, when there may be new
// work. Waking one that is awake, or waking it many times, wakes it once.
type Waker struct{ c chan struct{} }

// NewWaker returns a Waker.
func NewWaker() *Waker { return &Waker{c: make(chan struct{}, 1)} }

// Wake wakes the dispatcher. It never blocks.
func (w *Waker) Wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// WakingStore returns s, whose every Update that adds an event wakes w
// once it has committed, so that the event's deliveries go out at once
// rather than at the dispatcher's next poll. Reads pass through.
func WakingStore(s engine.Store, w *Waker) engine.Store { return wakingStore{Store: s, w: w} }

type wakingStore struct {
	engine.Store
	w *Waker
}

func (s wakingStore) Update(ctx context.Context, fn func(engine.Tx) error) error {
	added := false
	err := s.Store.Update(ctx, func(tx engine.Tx) error {
		added = false // A store may run fn again.
		return fn(eventTx{Tx: tx, added: &added})
	})
	if err == nil && added {
		s.w.Wake()
	}
	return err
}

// eventTx notes whether an event was added through it.
type eventTx struct {
	engine.Tx
	added *bool
}

func (t eventTx) AddEvent(e engine.Event) error {
	err := t.Tx.AddEvent(e)
	if err == nil {
		*t.added = true
	}
	return err
}
