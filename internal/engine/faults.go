package engine

import "sync/atomic"

// Faults arms failures inside the engine's transactions, for tests and for
// the daemon's fault injection. Because they live in the engine, they work
// the same on every store. The zero value injects nothing.
type Faults struct {
	receiptWrites atomic.Int64
}

// FailReceiptWrites makes the next n receipt writes fail inside their
// transaction, so the whole reservation rolls back.
func (f *Faults) FailReceiptWrites(n int) {
	f.receiptWrites.Add(int64(n))
}

// takeReceiptWrite consumes one armed receipt-write failure, if any.
func (f *Faults) takeReceiptWrite() bool {
	for {
		n := f.receiptWrites.Load()
		if n <= 0 {
			return false
		}
		if f.receiptWrites.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// ErrInjectedReceiptWrite is the error an armed receipt-write fault raises
// inside the transaction.
var ErrInjectedReceiptWrite = Errorf(CodeInternal, "injected fault: receipt write failed")
