package engine

// The outcome words say what became of one request, in the one vocabulary
// that the daemon's request log and metrics, reservectl's state file,
// import plan and --json output, the bench and the campaign share. The
// outcome of an authoritative answer is its status word (Answers: reserved,
// unavailable, cancelled, held, …); these are the others.
const (
	// OutcomeCreated is a reservation made by this request (in the request
	// log and the bench, where a first "reserved" and a replayed one are
	// told apart).
	OutcomeCreated = "created"
	// OutcomeReplayed is the stored answer of an operation decided before.
	OutcomeReplayed = "replayed"
	// OutcomeRejected is a decided refusal: a problem that retrying with
	// the same key cannot change (engine.Undecided is false for its code).
	OutcomeRejected = "rejected"
	// OutcomeConflict is the refusal CodeOperationConflict, which the
	// request log and metrics count apart from the other refusals.
	OutcomeConflict = "conflict"
	// OutcomeUnknown is a request without an authoritative answer: nothing
	// says whether it was decided, so it is retried with the same key.
	OutcomeUnknown = "unknown"
	// OutcomeError is an answer of the server's failure (5xx) in the
	// request log and metrics; for the client its outcome is unknown.
	OutcomeError = "error"
	// OutcomeRateLimited is a request that the daemon's rate limit refused
	// before it was decided (429 rate_limited, in the request log, the
	// metrics and the bench): undecided, it is sent again with the same
	// key after its Retry-After.
	OutcomeRateLimited = "rate_limited"
	// OutcomeOK is an answer of a route that decides nothing (a read).
	OutcomeOK = "ok"
)
