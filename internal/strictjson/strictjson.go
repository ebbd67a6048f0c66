// Package strictjson is the one strict decoder of JSON objects in reserve:
// a body is exactly one object whose members are among those a caller
// lists, each at most once, required ones present, each value a scalar of
// its member's kind (or, for a member that takes a list, an array of
// strings), and nothing after the object but white space. It
// decodes the bodies clients send on a fast path that only scans bytes,
// and anything else on encoding/json's token stream, which words every
// refusal; both give the same result. A refusal is an *Error naming the
// offending member, which callers turn into their own refusal with the
// same message.
//
// It must not import package engine or any adapter; it imports only clip.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/reserve/reserve/internal/clip"
)

// Error is a body that the strict rules refuse: Message says why, in a
// sentence for people, and Member is the member it names, if any.
type Error struct {
	Member  string
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// errorf returns an *Error about member with a formatted message.
func errorf(member, format string, args ...any) *Error {
	return &Error{Member: member, Message: fmt.Sprintf(format, args...)}
}

// Member describes one accepted member of an object decoded by Decode.
// Build members with StringMember, IntMember, TimeMember, BoolMember,
// OptionalBoolMember and StringsMember.
type Member struct {
	name     string
	required bool
	kind     string
	set      func(tok json.Token) error
	// setStrings, set only for StringsMember, takes the items of an
	// array of strings; set refuses every scalar of such a member.
	setStrings func(items []string) error
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

// OptionalBoolMember accepts a JSON true or false, which it points *dst
// at; an absent member leaves *dst nil.
func OptionalBoolMember(name string, dst **bool) Member {
	m := BoolMember(name, false, new(bool))
	set := m.set
	m.set = func(tok json.Token) error {
		if err := set(tok); err != nil {
			return err
		}
		b := tok.(bool)
		*dst = &b
		return nil
	}
	return m
}

// StringsMember accepts a JSON array of strings (possibly empty, never
// null); validate (optional) returns an error whose text completes the
// sentence `member "name" …`. It is the one kind of member whose value
// nests: its items are scalars, never arrays or objects.
func StringsMember(name string, required bool, validate func([]string) error, dst *[]string) Member {
	return Member{name: name, required: required, kind: "a JSON array of strings",
		set: func(json.Token) error { return errWrongKind },
		setStrings: func(items []string) error {
			if validate != nil {
				if err := validate(items); err != nil {
					return err
				}
			}
			*dst = items
			return nil
		}}
}

// Then accepts what m accepts and calls set after m has set its
// destination, so a caller learns that the member was present.
func Then(m Member, set func()) Member {
	inner := m.set
	m.set = func(tok json.Token) error {
		if err := inner(tok); err != nil {
			return err
		}
		set()
		return nil
	}
	return m
}

// Nullable accepts what m accepts, and also JSON null, for which it calls
// onNull instead of setting m's destination; set is called after either,
// so a caller learns that the member was present.
func Nullable(m Member, onNull, set func()) Member {
	inner := m.set
	m.kind += " or null"
	m.set = func(tok json.Token) error {
		if tok == nil {
			onNull()
		} else if err := inner(tok); err != nil {
			return err
		}
		set()
		return nil
	}
	return m
}

var errWrongKind = errors.New("wrong kind")

// Decode decodes body as exactly one JSON object whose members are among
// members: each at most once, required ones present, values scalar and of
// the member's kind, nothing after the object but white space. It is the
// one strict decoder of reserve; every error is an *Error, which names the
// offending member where there is one.
func Decode(body []byte, members []Member) error {
	if DecodePlain(body, members) {
		return nil
	}
	return decodeTokens(body, members)
}

// decodeTokens is Decode on encoding/json's token stream: it accepts
// every valid body and words every error.
func decodeTokens(body []byte, members []Member) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return SyntaxError(err, "body must be one JSON object")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errorf("", "body must be one JSON object, not %s", Describe(tok))
	}
	seen := make(map[string]bool, len(members))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return SyntaxError(err, "malformed JSON object")
		}
		name, _ := tok.(string) // Token guarantees object keys are strings.
		m := findMember(members, name)
		if m == nil {
			if len(members) == 0 {
				return errorf(name, "member %q is not allowed: the body must be the empty object {}", clip.Text(name, 40))
			}
			return errorf(name, "member %q is not allowed (allowed: %s)", clip.Text(name, 40), memberNames(members))
		}
		if seen[name] {
			return errorf(name, "member %q appears more than once", name)
		}
		seen[name] = true
		val, err := dec.Token()
		if err != nil {
			e := SyntaxError(err, fmt.Sprintf("malformed value for member %q", name))
			e.Member = name
			return e
		}
		d, nested := val.(json.Delim)
		if nested && (d != '[' || m.setStrings == nil) {
			return errorf(name, "member %q must be %s, not %s", name, m.kind, Describe(val))
		}
		set := func() error { return m.set(val) }
		if nested {
			items, err := stringItems(dec, name, m.kind)
			if err != nil {
				return err
			}
			set = func() error { return m.setStrings(items) }
		}
		if err := set(); err != nil {
			if errors.Is(err, errWrongKind) {
				return errorf(name, "member %q must be %s, not %s", name, m.kind, Describe(val))
			}
			return errorf(name, "member %q %s", name, err)
		}
	}
	if _, err := dec.Token(); err != nil { // The closing '}'.
		return SyntaxError(err, "malformed JSON object")
	}
	for _, m := range members {
		if m.required && !seen[m.name] {
			return errorf(m.name, "member %q is missing", m.name)
		}
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return SyntaxError(err, "unexpected data after the JSON object")
		}
		return errorf("", "unexpected data after the JSON object: %s", Describe(tok))
	}
	return nil
}

// stringItems reads the items of an array of strings, the value of member
// name of kind, up to and with its closing bracket.
func stringItems(dec *json.Decoder, name, kind string) ([]string, error) {
	items := []string{}
	for {
		tok, err := dec.Token()
		if err != nil {
			e := SyntaxError(err, fmt.Sprintf("malformed value for member %q", name))
			e.Member = name
			return nil, e
		}
		if d, ok := tok.(json.Delim); ok && d == ']' {
			return items, nil
		}
		s, ok := tok.(string)
		if !ok {
			return nil, errorf(name, "member %q must be %s, not an array holding %s", name, kind, Describe(tok))
		}
		items = append(items, s)
	}
}

// DecodePlain is the fast path of Decode for the bodies clients send:
// one object of distinct, known members whose names and string values are
// printable ASCII without escapes and whose numbers are plain integers. It
// reports true only when it decoded a body that Decode's token path
// accepts with the same values, having set every member; on anything else
// (an error, an escape, a fraction, null, nesting, …) it reports false and
// the token path decides and words the error. FuzzDecodeStrictPaths checks that the two
// agree.
func DecodePlain(body []byte, members []Member) bool {
	if len(members) > 64 {
		return false
	}
	var seen uint64
	i := SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = SkipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			name, next, ok := PlainString(body, i)
			if !ok {
				return false
			}
			idx := memberIndex(members, name)
			if idx < 0 || seen&(1<<idx) != 0 {
				return false
			}
			seen |= 1 << idx
			i = SkipSpace(body, next)
			if i >= len(body) || body[i] != ':' {
				return false
			}
			i = SkipSpace(body, i+1)
			val, next, ok := PlainValue(body, i)
			if !ok || members[idx].set(val) != nil {
				return false
			}
			i = SkipSpace(body, next)
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
			i = SkipSpace(body, i+1)
		}
	}
	if SkipSpace(body, i) != len(body) {
		return false
	}
	for j, m := range members {
		if m.required && seen&(1<<j) == 0 {
			return false
		}
	}
	return true
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// PlainString reads a JSON string at i that has only printable ASCII and no
// escapes, returning its contents and the index after it.
func PlainString(b []byte, i int) (string, int, bool) {
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

// PlainValue reads a plain string, an integer literal (-?(0|[1-9][0-9]*),
// not followed by a fraction or exponent) or true or false at i, as the
// token encoding/json would return, and the index after it.
func PlainValue(b []byte, i int) (json.Token, int, bool) {
	if i >= len(b) {
		return nil, i, false
	}
	switch c := b[i]; {
	case c == '"':
		return PlainString(b, i)
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

// SyntaxError is the refusal of a body whose JSON broke off with err (a
// syntax error or the end of the body) where what was expected.
func SyntaxError(err error, what string) *Error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errorf("", "%s: the body ends too early", what)
	}
	return errorf("", "%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
}

// Describe names a JSON token for a message: "an object", "a string", "the
// number 12", ….
func Describe(tok json.Token) string {
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
		return "the number " + clip.Text(string(v), 30)
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}
