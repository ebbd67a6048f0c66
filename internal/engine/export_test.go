package engine

// DecodeTokens and DecodePlain expose the two paths of DecodeStrict to the
// differential fuzz test.
var (
	DecodeTokens = decodeTokens
	DecodePlain  = decodePlain
)
