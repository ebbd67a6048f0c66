package engine

import "sync"

// cacheSize bounds how many entries a cache remembers. A daemon sees few
// distinct uids; when more arrive a cache starts over rather than tracking
// recency.
const cacheSize = 4096

// cache remembers what the store has confirmed, by key, so that a busy
// client does not pay a read transaction and a record decode on every
// request. It is sound only for records that never change once stored
// (the Engine's fields say why each of its caches is). Failed lookups are
// never cached: a record that another daemon on a shared database stores is
// found as soon as it exists.
type cache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

func (c *cache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *cache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}
