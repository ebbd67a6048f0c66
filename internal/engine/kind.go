package engine

// OperationKind is what an operation key is used for. Each kind answers
// with status words of its own (the rows of Answers) and fingerprints its
// payload under fingerprint versions of its own (fingerprintVersions).
// Its words are stored (in the CLI's journal) and sent (in the operations
// view) as they are.
type OperationKind string

// The kinds of operation.
const (
	OperationReserve OperationKind = "reserve"
	OperationCancel  OperationKind = "cancel"
	// OperationHold keeps places for a while; OperationConfirm turns a
	// hold into a reservation and OperationRelease gives its places back.
	OperationHold    OperationKind = "hold"
	OperationConfirm OperationKind = "confirm"
	OperationRelease OperationKind = "release"
	// OperationRetryDelivery sends a delivery of an event again, and
	// OperationSkipDelivery gives one up on purpose: an operator's
	// controlled corrections of the deliveries.
	OperationRetryDelivery OperationKind = "retry_delivery"
	OperationSkipDelivery  OperationKind = "skip_delivery"
	// OperationLeaveWaitlist takes an entry off a waiting list, declining
	// the places it was offered if any. (Joining one is a reservation
	// request with "waitlist": true.)
	OperationLeaveWaitlist OperationKind = "leave_waitlist"
)
