package engine

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// tokenCacheSize bounds how many API token principals an engine remembers,
// and how many tokens' uses it tracks. A daemon sees few distinct tokens;
// when more arrive the cache starts over rather than tracking recency.
const tokenCacheSize = 4096

// DefaultTokenCacheTTL is how long an engine trusts what it read of an API
// token before it reads the token again.
//
// The cache saves a busy client a read transaction and a record decode per
// request (on PostgreSQL a round trip). A revocation must still be
// effective on the very next request, on every daemon, even where several
// daemons share one database and none can see another's cache. So an entry
// is trusted for this long after the read that found the token began, and
// no longer; and a revocation on an engine that may share its store
// (WithExclusiveStore not given) answers only after waiting this long past
// its commit. By then every entry that any engine read before the commit
// has lapsed, so any request that starts after the revocation's answer
// reads the store and is refused. An expiry needs no such care: an entry
// carries the token's expiry and is checked against it on every use.
// Sessions and login codes end at any time and are never cached, nor are
// failed lookups: a token created by another daemon on a shared database is
// found as soon as it exists.
const DefaultTokenCacheTTL = time.Second

// cachedToken is what a cache entry holds of an API token.
type cachedToken struct {
	p       Principal
	expires time.Time // The token's expiry; zero: never.
	readAt  time.Time // When the read that found the token began (monotonic).
	// noted is when a use of the token was last noted for FlushTokenUse,
	// in Unix nanoseconds (zero: never); an entry that replaces another
	// takes it over. Kept here, an authentication tells without a lock of
	// its own whether its use needs noting.
	noted atomic.Int64
}

// tokenCache remembers the API tokens the store has confirmed, by hash, for
// at most ttl each (see DefaultTokenCacheTTL).
type tokenCache struct {
	ttl time.Duration
	mu  sync.RWMutex
	m   map[string]*cachedToken
	// forgotten counts the entries forgotten (revocations); a read that
	// began before one must not put back what it found (putUnlessForgotten).
	forgotten uint64
}

// get returns the entry of hash if it was read less than ttl ago.
func (c *tokenCache) get(hash string) (*cachedToken, bool) {
	c.mu.RLock()
	t, ok := c.m[hash]
	c.mu.RUnlock()
	if !ok || time.Since(t.readAt) >= c.ttl {
		return nil, false
	}
	return t, true
}

// generation returns the count of forgotten entries, for
// putUnlessForgotten.
func (c *tokenCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.forgotten
}

// putUnlessForgotten remembers t as the entry of hash, with the noted use
// of the entry it replaces, unless an entry was forgotten since generation
// returned gen: the read that found t may have begun before a revocation
// committed, and putting it back would let a request after the revocation's
// answer pass. (Revocations are rare; a put they skip only costs the next
// request a read.)
func (c *tokenCache) putUnlessForgotten(hash string, t *cachedToken, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forgotten != gen {
		return
	}
	if old, ok := c.m[hash]; ok {
		t.noted.Store(old.noted.Load())
	}
	if c.m == nil || len(c.m) >= tokenCacheSize {
		c.m = make(map[string]*cachedToken)
	}
	c.m[hash] = t
}

func (c *tokenCache) forget(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgotten++
	delete(c.m, hash)
}

// TokenUseResolution is how precisely an API token's last_used_at follows
// its uses: an engine notes a token's use at most once per this period, so
// a busy token costs one small write a minute, not one per request.
const TokenUseResolution = time.Minute

// noteUse notes a use of the token of entry t at, for FlushTokenUse,
// unless a use less than TokenUseResolution before was noted already.
// Nearly every call returns after one atomic load.
func (e *Engine) noteUse(hash string, t *cachedToken, at time.Time) {
	last := t.noted.Load()
	if last != 0 && at.UnixNano()-last < int64(TokenUseResolution) {
		return
	}
	if t.noted.CompareAndSwap(last, at.UnixNano()) {
		e.use.add(hash, at)
	}
}

// tokenUse holds the uses of API tokens that are noted but not yet written
// to the store. Authentication only notes a use in memory, and that at
// most once per TokenUseResolution per token; FlushTokenUse writes what was
// noted, in bounded steps that the daemon takes in the background, so no
// authenticated read becomes a write.
type tokenUse struct {
	mu      sync.Mutex
	pending map[string]time.Time // By hash: the newest use not yet written.
}

// add keeps the use of the token hash at, unless a newer one is kept.
func (u *tokenUse) add(hash string, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pending == nil {
		u.pending = make(map[string]time.Time)
	}
	if prev, ok := u.pending[hash]; (ok && !prev.Before(at)) || (!ok && len(u.pending) >= tokenCacheSize) {
		return
	}
	u.pending[hash] = at
}

// tokenUseAt is one noted use.
type tokenUseAt struct {
	hash string
	at   time.Time
}

// take removes and returns up to limit noted uses, in order of hash (so
// that concurrent writers lock tokens in one order), and whether more are
// left.
func (u *tokenUse) take(limit int) ([]tokenUseAt, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	uses := make([]tokenUseAt, 0, min(limit, len(u.pending)))
	for hash, at := range u.pending {
		uses = append(uses, tokenUseAt{hash, at})
	}
	slices.SortFunc(uses, func(a, b tokenUseAt) int { return cmp.Compare(a.hash, b.hash) })
	more := len(uses) > limit
	uses = uses[:min(limit, len(uses))]
	for _, x := range uses {
		delete(u.pending, x.hash)
	}
	return uses, more
}

// giveBack returns uses that could not be written, unless a newer use of
// the same token was noted meanwhile.
func (u *tokenUse) giveBack(uses []tokenUseAt) {
	for _, x := range uses {
		u.add(x.hash, x.at)
	}
}

// forget drops the noted use of a token, when it is revoked.
func (u *tokenUse) forget(hash string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.pending, hash)
}
