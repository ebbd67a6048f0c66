package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// RateLimit configures the rate limit of API requests (paths under /api/):
// a token bucket for every actor that is not an admin, and for requests
// without credentials one for every client address. Admins are not
// limited: they run the imports and the benches, and they can make as
// many actors as they like anyway. The health probes, the metrics and the
// browser page's files are not API requests. A batch is one request,
// however many reservations it carries.
type RateLimit struct {
	// Rate is how many requests an actor may send a second, on average.
	// Zero (or a zero Burst) means no limit.
	Rate float64
	// Burst is how many requests an actor may send at once, the size of
	// its bucket.
	Burst int
	// Now is the limit's clock; nil means time.Now.
	Now func() time.Time
}

// AddressShare is how many times an actor's rate and burst a client
// address gets for its requests without credentials: one address can be a
// whole venue's network behind NAT, or the TLS proxy in front of the
// daemon, whose address every request from it comes from, and all of
// them sign in at the same time.
const AddressShare = 10

// maxBuckets bounds the buckets a limiter keeps. Buckets are dropped once
// they are full again, so only the callers of the last moments have one;
// beyond the bound a new caller is not limited until buckets are dropped.
const maxBuckets = 1 << 16

// limiter is a token bucket for every key that sent a request recently.
type limiter struct {
	rate  rate.Limit
	burst int
	now   func() time.Time
	// refill is how long an empty bucket takes to fill up; a bucket full
	// again is like a new one, so sweep drops it, at most once a refill.
	refill time.Duration

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// newLimiter returns the limiter of rate requests a second and burst at
// once for each key, or nil for no limit.
func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	if perSecond <= 0 || burst <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	refill := time.Duration(float64(burst) / perSecond * float64(time.Second))
	return &limiter{rate: rate.Limit(perSecond), burst: burst, now: now, refill: max(refill, time.Second), buckets: map[string]*rate.Limiter{}}
}

// take takes one request of key from its bucket and returns zero, or,
// with the bucket empty, takes nothing and returns how long until it holds
// a request again.
func (l *limiter) take(key string) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= l.refill {
		l.sweep(now)
	}
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			// Full until the next sweep, one refill after the last: a
			// flood of new callers does not make every request walk
			// the buckets.
			return 0
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[key] = b
	}
	r := b.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait
	}
	return 0
}

// sweep drops the buckets that are full at now.
func (l *limiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	l.swept = now
}

// size returns how many buckets l keeps.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// rateLimits are the limiters of a server: per actor and per address.
type rateLimits struct {
	cfg       RateLimit
	actors    *limiter // By actor, and on the socket by uid.
	addresses *limiter // By client address (clientKey), for requests without credentials.
}

func newRateLimits(cfg RateLimit) *rateLimits {
	actors := newLimiter(cfg.Rate, cfg.Burst, cfg.Now)
	if actors == nil {
		return nil
	}
	return &rateLimits{cfg: cfg, actors: actors, addresses: newLimiter(cfg.Rate*AddressShare, cfg.Burst*AddressShare, cfg.Now)}
}

// limit takes request r of who (the zero Principal for a request without
// credentials) from its bucket, and returns the rate_limited refusal, with
// its Retry-After, when that is empty. Admins are not limited, neither on
// TCP nor on the socket; a caller without an actor is limited by its uid
// on the socket and by its address on TCP.
func (l *rateLimits) limit(r *http.Request, who engine.Principal) error {
	if l == nil || who.Admin {
		return nil
	}
	c := connOf(r.Context())
	var lim *limiter
	var key, whose string
	switch {
	case who.Actor != "":
		lim, key, whose = l.actors, "actor "+who.Actor, who.Actor
	case c.socket && c.peerErr == nil && c.admin:
		return nil
	case c.socket && c.peerErr == nil:
		uid := strconv.FormatUint(uint64(c.uid), 10)
		lim, key, whose = l.actors, "uid "+uid, "uid "+uid
	default:
		addr := clientKey(r.RemoteAddr)
		lim, key, whose = l.addresses, "address "+addr, "requests without credentials from "+addr
	}
	wait := lim.take(key)
	if wait <= 0 {
		return nil
	}
	seconds := int((wait + time.Second - 1) / time.Second)
	return &retryLater{wait: wait, err: engine.Errorf(api.CodeRateLimited,
		"too many requests of %s: the daemon allows %s a second on average, %d at once; nothing was done: send the same request again, with the same Idempotency-Key, after %d s (Retry-After)",
		whose, strconv.FormatFloat(float64(lim.rate), 'f', -1, 64), lim.burst, seconds)}
}
