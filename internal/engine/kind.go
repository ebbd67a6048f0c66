package engine

// OperationKind is what an operation key is used for. Each kind answers
// with status words of its own (answerStatuses) and fingerprints its
// payload under fingerprint versions of its own (fingerprintVersions).
//
// It is an alias of string, so that front ends that keep the kind as a
// word of their own (the CLI's journal, the server's status table) pass it
// without a conversion.
type OperationKind = string

// The kinds of operation.
const (
	OperationReserve OperationKind = "reserve"
	OperationCancel  OperationKind = "cancel"
)
