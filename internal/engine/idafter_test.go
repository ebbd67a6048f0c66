package engine

import (
	"fmt"
	"testing"
	"time"
)

// TestIDAfter: the id after another sorts after it, also at the end of a
// millisecond's room, and making it leaves the ids of this process's own
// clock in order: one made at a millisecond after an id far ahead of it
// still sorts after the ones made before it in that millisecond.
func TestIDAfter(t *testing.T) {
	now := time.Now()
	first := NewReservationID(now)
	// An id of another daemon, whose clock is a second ahead.
	ahead := fmt.Sprintf("%012x", now.UnixMilli()+1000) + first[12:]
	for _, last := range []string{ahead, ahead[:12] + "ffffffffffffffffffff", first} {
		if next := idAfter(last); next <= last || !IsReservationID(next) {
			t.Errorf("idAfter(%s) = %s, not after it", last, next)
		}
	}
	after := idAfter(ahead)
	if again := NewReservationID(now); again <= first {
		t.Errorf("after idAfter(%s) = %s, an id of this millisecond %s sorts before the earlier %s", ahead, after, again, first)
	}
}
