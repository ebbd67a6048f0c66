package engine

// DecodeTokens and DecodePlain expose the two paths of DecodeStrict to the
// differential fuzz test.
var (
	DecodeTokens = decodeTokens
	DecodePlain  = decodePlain
)

// DecodeBatchTokens and DecodeBatchPlain expose the two paths of
// DecodeBatch to FuzzDecodeBatch.
var (
	DecodeBatchTokens = decodeBatchTokens
	DecodeBatchPlain  = decodeBatchPlain
)

// ErrPingPending is Ping's cause while an earlier read still waits.
var ErrPingPending = errPingPending
