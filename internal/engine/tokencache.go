package engine

import "sync"

// tokenCacheSize bounds how many API token principals an engine remembers.
// A daemon sees few distinct tokens; when more arrive the cache starts over
// rather than tracking recency.
const tokenCacheSize = 4096

// tokenCache remembers the principals of API tokens the store has confirmed,
// by the token's hash, so a busy client does not pay a read transaction and a
// record decode on every request. That is sound because an API token record
// never changes and is never deleted (there is no revocation); should that
// change, the cache must be invalidated with it. Sessions and login codes end
// and are never cached, nor are failed lookups: a token created by another
// daemon on a shared database is found as soon as it exists.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]Principal
}

func (c *tokenCache) get(hash string) (Principal, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.m[hash]
	return p, ok
}

func (c *tokenCache) put(hash string, p Principal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= tokenCacheSize {
		c.m = make(map[string]Principal)
	}
	c.m[hash] = p
}
