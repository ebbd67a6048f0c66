package engine_test

import (
	"context"
	"testing"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
)

// BenchmarkAuthenticateCached is what an authenticated request pays for
// its API token once the engine has read it: the cache lookup, the expiry
// check and noting the use; run with -cpu to see contention.
func BenchmarkAuthenticateCached(b *testing.B) {
	ctx := context.Background()
	eng := engine.New(memstore.New(memstore.Options{}))
	tok, err := eng.CreateToken(ctx, "alice", false)
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := eng.Authenticate(ctx, tok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
