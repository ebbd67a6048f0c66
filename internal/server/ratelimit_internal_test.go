package server

import (
	"strconv"
	"testing"
	"time"
)

// TestLimiterDropsIdleBuckets: a bucket that is full again is like a new
// one, so the limiter drops it once a refill has passed; a key seen again
// later starts with a full bucket. The limiter keeps at most maxBuckets
// buckets: beyond them a new key is not limited, and an old key keeps its
// bucket.
func TestLimiterDropsIdleBuckets(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l := newLimiter(2, 4, func() time.Time { return now })
	if l.refill != 2*time.Second {
		t.Fatalf("refill = %v, want 2s (4 requests at 2 a second)", l.refill)
	}
	for i := range 1000 {
		if wait := l.take("key " + strconv.Itoa(i)); wait != 0 {
			t.Fatalf("the first request of a key waits %v", wait)
		}
	}
	for range 3 {
		l.take("busy")
	}
	if n := l.size(); n != 1001 {
		t.Fatalf("%d buckets, want 1001", n)
	}
	now = now.Add(time.Second) // The others are full again, "busy" has 3 of 4.
	l.take("busy")
	l.take("busy")
	if n := l.size(); n != 1001 {
		t.Fatalf("a sweep before a whole refill passed: %d buckets left", n)
	}
	now = now.Add(time.Second) // "busy" has 3 of 4.
	l.take("new")
	if n := l.size(); n != 2 {
		t.Errorf("after a refill: %d buckets, want the busy key's and the new one's", n)
	}
	for range 3 {
		if wait := l.take("busy"); wait != 0 {
			t.Fatalf("the busy key, with 3 requests in its bucket, waits %v", wait)
		}
	}
	if wait := l.take("busy"); wait != 500*time.Millisecond {
		t.Errorf("the busy key with an empty bucket waits %v, want 500ms", wait)
	}

	for i := l.size(); i < maxBuckets; i++ {
		l.take("many " + strconv.Itoa(i))
	}
	if wait := l.take("one too many"); wait != 0 || l.size() != maxBuckets {
		t.Errorf("a new key beyond maxBuckets: wait %v, %d buckets; want no wait and %d buckets", wait, l.size(), maxBuckets)
	}
	if wait := l.take("busy"); wait != 500*time.Millisecond {
		t.Errorf("the busy key beyond maxBuckets waits %v, want 500ms", wait)
	}
}
