package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/strictjson"
)

// DecodeBatch decodes the body of POST /api/v1/batches,
// {"atomic":bool,"items":[{"key":…,"workshop":…,"quantity":…},…]}
// ("atomic" optional, false by default; an item may add "waitlist", as a
// single reservation may), with the strict rules of every
// body. The body is read as a stream of tokens and each item is decoded
// from its own bytes, so the cost grows with the items, not with items
// times body. A body that is not such an object, or has no items or more
// than MaxBatchItems, is an error for the whole batch. An item that breaks
// the contract is an entry whose Invalid says how, and the others stand.
func DecodeBatch(body []byte) (atomic bool, entries []engine.BatchEntry, err error) {
	if atomic, entries, ok := decodeBatchPlain(body); ok {
		return atomic, entries, nil
	}
	return decodeBatchTokens(body)
}

// decodeBatchPlain is the fast path of DecodeBatch for the batches clients
// send: one object of "atomic" (true or false) and "items", each item an
// object without nesting whose strings are printable ASCII without escapes,
// and every item valid. It reports true only when it decoded a body that
// decodeBatchTokens decodes to the same batch; on anything else (an
// invalid item, an escape, nesting, white space where it does not expect
// any, …) it reports false and decodeBatchTokens decides and words the
// error. FuzzDecodeBatch checks that the two agree.
func decodeBatchPlain(body []byte) (atomic bool, entries []engine.BatchEntry, ok bool) {
	i := strictjson.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false, nil, false
	}
	var sawAtomic, sawItems bool
	for first := true; ; first = false {
		i = strictjson.SkipSpace(body, i+1)
		if first && i < len(body) && body[i] == '}' {
			return false, nil, false // No items: the token path words it.
		}
		name, next, ok := strictjson.PlainString(body, i)
		if !ok {
			return false, nil, false
		}
		i = strictjson.SkipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return false, nil, false
		}
		i = strictjson.SkipSpace(body, i+1)
		switch {
		case name == "atomic" && !sawAtomic:
			sawAtomic = true
			val, next, ok := strictjson.PlainValue(body, i)
			b, isBool := val.(bool)
			if !ok || !isBool {
				return false, nil, false
			}
			atomic, i = b, next
		case name == "items" && !sawItems:
			sawItems = true
			if entries, i, ok = plainItems(body, i); !ok {
				return false, nil, false
			}
		default:
			return false, nil, false
		}
		i = strictjson.SkipSpace(body, i)
		if i >= len(body) {
			return false, nil, false
		}
		if body[i] == '}' {
			break
		}
		if body[i] != ',' {
			return false, nil, false
		}
	}
	if !sawItems || strictjson.SkipSpace(body, i+1) != len(body) {
		return false, nil, false
	}
	return atomic, entries, true
}

// plainItems reads the array of items at i for decodeBatchPlain: from 1 to
// MaxBatchItems flat objects, each a valid item; it returns the index
// after the array.
func plainItems(body []byte, i int) ([]engine.BatchEntry, int, bool) {
	if i >= len(body) || body[i] != '[' {
		return nil, i, false
	}
	entries := make([]engine.BatchEntry, 0, 16)
	for {
		i = strictjson.SkipSpace(body, i+1)
		if len(entries) == engine.MaxBatchItems || i >= len(body) || body[i] != '{' {
			return nil, i, false
		}
		end := flatObjectEnd(body, i)
		if end < 0 {
			return nil, i, false
		}
		var en engine.BatchEntry
		var key string
		if !strictjson.DecodePlain(body[i:end], itemMembers(&key, &en.Request)) {
			return nil, i, false
		}
		en.Key = engine.OperationKey(key)
		entries = append(entries, en)
		i = strictjson.SkipSpace(body, end)
		if i >= len(body) {
			return nil, i, false
		}
		if body[i] == ']' {
			return entries, i + 1, true
		}
		if body[i] != ',' {
			return nil, i, false
		}
	}
}

// flatObjectEnd returns the index after the object that starts at i, if
// it has no nested object or array and its strings are plain
// (strictjson.PlainString), else -1.
func flatObjectEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			next := plainStringEnd(b, j)
			if next < 0 {
				return -1
			}
			j = next - 1
		case '{', '[':
			return -1
		case '}':
			return j + 1
		}
	}
	return -1
}

// plainStringEnd returns the index after the plain string
// (strictjson.PlainString) at i, or -1.
func plainStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c == '\\' || c < 0x20 || c > 0x7e:
			return -1
		}
	}
	return -1
}

// itemError is the refusal of item n, raw, that DecodeStrict refused with
// err, checked in the order of the single reservation: the item's operation
// key first (missing, or not an operation key), then its request. It also
// returns the item's key as far as it can be read.
func itemError(n int, raw []byte, err error) (engine.OperationKey, error) {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		if i := strictjson.SkipSpace(raw, 0); i < len(raw) && raw[i] != '{' {
			return "", engine.Errorf(engine.CodeRequestContract, "item %d must be a JSON object", n)
		}
		return "", engine.Errorf(engine.CodeRequestContract, "item %d: %s", n, engine.ErrorMessage(err))
	}
	k, ok := members["key"]
	if !ok {
		return "", engine.Errorf(CodeMissingIdempotencyKey, "item %d has no member \"key\": every item needs an operation key of its own, a lowercase canonical UUIDv4 or UUIDv7", n)
	}
	var key string
	if json.Unmarshal(k, &key) != nil || !engine.IsOperationKey(engine.OperationKey(key)) {
		return engine.OperationKey(key), engine.Errorf(engine.CodeInvalidIdempotencyKey, "item %d: member \"key\" must be a lowercase canonical UUIDv4 or UUIDv7 operation key", n)
	}
	return engine.OperationKey(key), engine.Errorf(engine.CodeRequestContract, "item %d: %s", n, engine.ErrorMessage(err))
}

// itemMembers are the members of one item of a batch.
func itemMembers(key *string, req *engine.Request) []strictjson.Member {
	return append([]strictjson.Member{strictjson.StringMember("key", true, nil, key)}, requestMembers(req)...)
}

// decodeBatchTokens is DecodeBatch on encoding/json's token stream: it
// accepts every valid body and words every error.
func decodeBatchTokens(body []byte) (atomic bool, entries []engine.BatchEntry, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return false, nil, contractSyntax(err, "body must be one JSON object")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return false, nil, engine.Errorf(engine.CodeRequestContract, "body must be one JSON object, not %s", strictjson.Describe(tok))
	}
	var sawAtomic, sawItems bool
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false, nil, contractSyntax(err, "malformed JSON object")
		}
		switch name, _ := tok.(string); name {
		case "atomic":
			if sawAtomic {
				return false, nil, engine.Errorf(engine.CodeRequestContract, "member \"atomic\" appears more than once")
			}
			sawAtomic = true
			val, err := dec.Token()
			if err != nil {
				return false, nil, contractSyntax(err, "malformed value for member \"atomic\"")
			}
			b, ok := val.(bool)
			if !ok {
				return false, nil, engine.Errorf(engine.CodeRequestContract, "member \"atomic\" must be true or false, not %s", strictjson.Describe(val))
			}
			atomic = b
		case "items":
			if sawItems {
				return false, nil, engine.Errorf(engine.CodeRequestContract, "member \"items\" appears more than once")
			}
			sawItems = true
			if entries, err = decodeItems(dec); err != nil {
				return false, nil, err
			}
		default:
			return false, nil, engine.Errorf(engine.CodeRequestContract, "member %q is not allowed (allowed: \"atomic\", \"items\")", engine.Truncate(name, 40))
		}
	}
	if _, err := dec.Token(); err != nil { // The closing '}'.
		return false, nil, contractSyntax(err, "malformed JSON object")
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return false, nil, contractSyntax(err, "unexpected data after the JSON object")
		}
		return false, nil, engine.Errorf(engine.CodeRequestContract, "unexpected data after the JSON object: %s", strictjson.Describe(tok))
	}
	if !sawItems {
		return false, nil, engine.Errorf(engine.CodeRequestContract, "member \"items\" is missing")
	}
	if len(entries) == 0 {
		return false, nil, engine.Errorf(engine.CodeRequestContract, "member \"items\" must hold from 1 to %d items, not none", engine.MaxBatchItems)
	}
	return atomic, entries, nil
}

// decodeItems decodes the array of a batch's items, each strictly from its
// own bytes.
func decodeItems(dec *json.Decoder) ([]engine.BatchEntry, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, contractSyntax(err, "malformed value for member \"items\"")
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, engine.Errorf(engine.CodeRequestContract, "member \"items\" must be an array, not %s", strictjson.Describe(tok))
	}
	var entries []engine.BatchEntry
	for dec.More() {
		if len(entries) == engine.MaxBatchItems {
			return nil, engine.Errorf(engine.CodeRequestContract, "member \"items\" must hold at most %d items", engine.MaxBatchItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, contractSyntax(err, fmt.Sprintf("malformed item %d", len(entries)+1))
		}
		var en engine.BatchEntry
		var key string
		err := DecodeStrict(raw, itemMembers(&key, &en.Request))
		en.Key = engine.OperationKey(key)
		if err != nil {
			en.Key, en.Invalid = itemError(len(entries)+1, raw, err)
		}
		entries = append(entries, en)
	}
	if _, err := dec.Token(); err != nil { // The closing ']'.
		return nil, contractSyntax(err, "malformed value for member \"items\"")
	}
	return entries, nil
}

// contractSyntax is strictjson.SyntaxError as a CodeRequestContract error.
func contractSyntax(err error, what string) error {
	return engine.Errorf(engine.CodeRequestContract, "%s", strictjson.SyntaxError(err, what))
}
