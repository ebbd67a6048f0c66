package engine

// DecodeBatchTokens and DecodeBatchPlain expose the two paths of
// DecodeBatch to FuzzDecodeBatch.
var (
	DecodeBatchTokens = decodeBatchTokens
	DecodeBatchPlain  = decodeBatchPlain
)

// ErrPingPending is Ping's cause while an earlier read still waits.
var ErrPingPending = errPingPending
