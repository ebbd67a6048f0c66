package strictjson

// DecodeTokens exposes the token path of Decode to the differential fuzz
// test, which checks the fast path (DecodePlain) against it.
var DecodeTokens = decodeTokens
