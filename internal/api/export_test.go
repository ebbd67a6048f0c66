package api

// DecodeBatchTokens and DecodeBatchPlain expose the two paths of
// DecodeBatch to FuzzDecodeBatch.
var (
	DecodeBatchTokens = decodeBatchTokens
	DecodeBatchPlain  = decodeBatchPlain
)
