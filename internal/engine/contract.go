package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Request is the typed payload of one reservation intent. Exactly these two
// members make up the request contract and the fingerprint.
type Request struct {
	Workshop string `json:"workshop"`
	Quantity int    `json:"quantity"`
}

// DecodeRequest decodes a reservation body under the strict request contract:
// exactly one JSON object with exactly the members "workshop" (a workshop id)
// and "quantity" (a JSON integer literal of at least 1), in any order. Every
// violation is a CodeRequestContract error whose message names the member.
func DecodeRequest(body []byte) (Request, error) {
	var r Request
	err := DecodeStrict(body, []Member{
		StringMember("workshop", true, ValidateWorkshopID, &r.Workshop),
		IntMember("quantity", true, 1, maxQuantity, &r.Quantity),
	})
	return r, err
}

// Validate checks a Request built in code (not decoded) against the same
// rules DecodeRequest applies, so every front end refuses the same payloads.
func (r Request) Validate() error {
	if err := ValidateWorkshopID(r.Workshop); err != nil {
		return Errorf(CodeRequestContract, "member \"workshop\" %s", err)
	}
	if r.Quantity < 1 || r.Quantity > maxQuantity {
		return Errorf(CodeRequestContract, "member \"quantity\" must be an integer from 1 to %d", maxQuantity)
	}
	return nil
}

// maxQuantity bounds quantities, capacities and max_quantity so that counter
// arithmetic can never overflow.
const maxQuantity = 1_000_000_000

// Member describes one accepted member of an object decoded by DecodeStrict.
// Build members with StringMember, IntMember and BoolMember.
type Member struct {
	name     string
	required bool
	kind     string
	set      func(tok json.Token) error
}

// StringMember accepts a JSON string; validate (optional) returns an error
// whose text completes the sentence `member "name" …`.
func StringMember(name string, required bool, validate func(string) error, dst *string) Member {
	return Member{name: name, required: required, kind: "a JSON string", set: func(tok json.Token) error {
		s, ok := tok.(string)
		if !ok {
			return errWrongKind
		}
		if validate != nil {
			if err := validate(s); err != nil {
				return err
			}
		}
		*dst = s
		return nil
	}}
}

// IntMember accepts a JSON integer literal (no fraction, no exponent, not a
// string or boolean) between lo and hi inclusive.
func IntMember(name string, required bool, lo, hi int, dst *int) Member {
	return Member{name: name, required: required, kind: "a JSON integer (no fraction, no exponent, no quotes)", set: func(tok json.Token) error {
		num, ok := tok.(json.Number)
		if !ok || strings.ContainsAny(string(num), ".eE") {
			return errWrongKind
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || n < int64(lo) || n > int64(hi) {
			return fmt.Errorf("must be an integer from %d to %d", lo, hi)
		}
		*dst = int(n)
		return nil
	}}
}

// TimeMember accepts a JSON string holding an RFC 3339 time.
func TimeMember(name string, required bool, dst *time.Time) Member {
	return Member{name: name, required: required, kind: "an RFC 3339 time string", set: func(tok json.Token) error {
		s, ok := tok.(string)
		if !ok {
			return errWrongKind
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return errors.New("must be an RFC 3339 time")
		}
		*dst = t
		return nil
	}}
}

// BoolMember accepts a JSON true or false.
func BoolMember(name string, required bool, dst *bool) Member {
	return Member{name: name, required: required, kind: "true or false", set: func(tok json.Token) error {
		b, ok := tok.(bool)
		if !ok {
			return errWrongKind
		}
		*dst = b
		return nil
	}}
}

var errWrongKind = errors.New("wrong kind")

// DecodeStrict decodes body as exactly one JSON object whose members are
// among members: each at most once, required ones present, values scalar and
// of the member's kind, nothing after the object but white space. It is the
// one strict decoder of reserve; every error is CodeRequestContract and names
// the offending member where there is one.
func DecodeStrict(body []byte, members []Member) error {
	if decodePlain(body, members) {
		return nil
	}
	return decodeTokens(body, members)
}

// decodeTokens is DecodeStrict on encoding/json's token stream: it accepts
// every valid body and words every error.
func decodeTokens(body []byte, members []Member) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return contractSyntax(err, "body must be one JSON object")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Errorf(CodeRequestContract, "body must be one JSON object, not %s", describeToken(tok))
	}
	seen := make(map[string]bool, len(members))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return contractSyntax(err, "malformed JSON object")
		}
		name, _ := tok.(string) // Token guarantees object keys are strings.
		m := findMember(members, name)
		if m == nil {
			if len(members) == 0 {
				return Errorf(CodeRequestContract, "member %q is not allowed: the body must be the empty object {}", truncate(name, 40))
			}
			return Errorf(CodeRequestContract, "member %q is not allowed (allowed: %s)", truncate(name, 40), memberNames(members))
		}
		if seen[name] {
			return Errorf(CodeRequestContract, "member %q appears more than once", name)
		}
		seen[name] = true
		val, err := dec.Token()
		if err != nil {
			return contractSyntax(err, fmt.Sprintf("malformed value for member %q", name))
		}
		if _, nested := val.(json.Delim); nested {
			return Errorf(CodeRequestContract, "member %q must be %s, not %s", name, m.kind, describeToken(val))
		}
		if err := m.set(val); err != nil {
			if errors.Is(err, errWrongKind) {
				return Errorf(CodeRequestContract, "member %q must be %s, not %s", name, m.kind, describeToken(val))
			}
			return Errorf(CodeRequestContract, "member %q %s", name, err)
		}
	}
	if _, err := dec.Token(); err != nil { // The closing '}'.
		return contractSyntax(err, "malformed JSON object")
	}
	for _, m := range members {
		if m.required && !seen[m.name] {
			return Errorf(CodeRequestContract, "member %q is missing", m.name)
		}
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return contractSyntax(err, "unexpected data after the JSON object")
		}
		return Errorf(CodeRequestContract, "unexpected data after the JSON object: %s", describeToken(tok))
	}
	return nil
}

// decodePlain is the fast path of DecodeStrict for the bodies clients send:
// one object of distinct, known members whose names and string values are
// printable ASCII without escapes and whose numbers are plain integers. It
// reports true only when it decoded a body that decodeTokens accepts with
// the same values, having set every member; on anything else (an error, an
// escape, a fraction, null, nesting, …) it reports false and decodeTokens
// decides and words the error. FuzzDecodeStrictPaths checks that the two
// agree.
func decodePlain(body []byte, members []Member) bool {
	if len(members) > 64 {
		return false
	}
	var seen uint64
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			name, next, ok := plainString(body, i)
			if !ok {
				return false
			}
			idx := memberIndex(members, name)
			if idx < 0 || seen&(1<<idx) != 0 {
				return false
			}
			seen |= 1 << idx
			i = skipSpace(body, next)
			if i >= len(body) || body[i] != ':' {
				return false
			}
			i = skipSpace(body, i+1)
			val, next, ok := plainValue(body, i)
			if !ok || members[idx].set(val) != nil {
				return false
			}
			i = skipSpace(body, next)
			if i >= len(body) {
				return false
			}
			if body[i] == '}' {
				i++
				break
			}
			if body[i] != ',' {
				return false
			}
			i = skipSpace(body, i+1)
		}
	}
	if skipSpace(body, i) != len(body) {
		return false
	}
	for j, m := range members {
		if m.required && seen&(1<<j) == 0 {
			return false
		}
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at i that has only printable ASCII and no
// escapes, returning its contents and the index after it.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return "", i, false
		}
	}
	return "", i, false
}

// plainValue reads a plain string, an integer literal (-?(0|[1-9][0-9]*),
// not followed by a fraction or exponent) or true or false at i, as the
// token encoding/json would return, and the index after it.
func plainValue(b []byte, i int) (json.Token, int, bool) {
	if i >= len(b) {
		return nil, i, false
	}
	switch c := b[i]; {
	case c == '"':
		return plainString(b, i)
	case c == '-' || ('0' <= c && c <= '9'):
		j := i
		if b[j] == '-' {
			j++
		}
		start := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		digits := j - start
		if digits == 0 || (digits > 1 && b[start] == '0') {
			return nil, i, false
		}
		if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
			return nil, i, false
		}
		return json.Number(b[i:j]), j, true
	case bytes.HasPrefix(b[i:], []byte("true")):
		return true, i + 4, true
	case bytes.HasPrefix(b[i:], []byte("false")):
		return false, i + 5, true
	}
	return nil, i, false
}

func findMember(members []Member, name string) *Member {
	if i := memberIndex(members, name); i >= 0 {
		return &members[i]
	}
	return nil
}

// memberIndex returns the index of the member called name, or -1.
func memberIndex(members []Member, name string) int {
	for i := range members {
		if members[i].name == name {
			return i
		}
	}
	return -1
}

func memberNames(members []Member) string {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = strconv.Quote(m.name)
	}
	return strings.Join(names, ", ")
}

func contractSyntax(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return Errorf(CodeRequestContract, "%s: the body ends too early", what)
	}
	return Errorf(CodeRequestContract, "%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", v.String())
	case string:
		return "a string"
	case json.Number:
		return "the number " + truncate(string(v), 30)
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// ValidateWorkshopID checks that id matches ^[a-z][a-z0-9-]{1,40}$. The error
// text completes the sentence `member "workshop" …`.
func ValidateWorkshopID(id string) error {
	if !matchName(id, false) {
		return fmt.Errorf("must match ^[a-z][a-z0-9-]{1,40}$, got %q", truncate(id, 50))
	}
	return nil
}

// ValidateActor checks that name matches ^[a-z][a-z0-9_-]{1,40}$.
func ValidateActor(name string) error {
	if !matchName(name, true) {
		return fmt.Errorf("actor names must match ^[a-z][a-z0-9_-]{1,40}$, got %q", truncate(name, 50))
	}
	return nil
}

// matchName matches ^[a-z][a-z0-9-]{1,40}$, with '_' also allowed after the
// first character when underscore is true.
func matchName(s string, underscore bool) bool {
	if len(s) < 2 || len(s) > 41 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		ok := ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '-' || (underscore && c == '_')
		if !ok {
			return false
		}
	}
	return true
}
