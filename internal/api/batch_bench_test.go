package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
)

// batchOf is the body of a batch of n items.
func batchOf(n int) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"key":%q,"workshop":"workshop-demo","quantity":1}`, uuid.NewString())
	}
	return []byte(`{"atomic":false,"items":[` + strings.Join(items, ",") + `]}`)
}

// BenchmarkDecodeBatch decodes batches of 1, 100 and 1,000 items: the
// bytes allocated per item stay about the same as the batch grows, since
// each item is decoded from its own bytes.
func BenchmarkDecodeBatch(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		body := batchOf(n)
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, entries, err := api.DecodeBatch(body); err != nil || len(entries) != n {
					b.Fatal(err)
				}
			}
		})
	}
}
