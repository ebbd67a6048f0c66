// Package redact hides secrets in what is shown to people: the passwords
// of PostgreSQL connection strings and of other URLs (an SMTP server's), in
// logs, error messages and command lines. Everything that shows a DSN, an error that may quote one, or a
// command line that may hold one goes through it.
//
// It imports nothing of reserve.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces every password.
const Mask = "xxxxx"

// passwordKeys are the connection parameters whose values are secrets.
var passwordKeys = map[string]bool{"password": true, "sslpassword": true}

// span is where a password lies in a connection string: [start, end).
type span struct{ start, end int }

// DSN returns dsn, a PostgreSQL connection string as libpq takes it, with
// every password replaced by Mask: in a postgres:// or postgresql:// URL
// the password of its user information and the values of its password
// and sslpassword parameters, in key=value pairs the values of those keys
// (quoted or not, a quote left open running to the end). A string that is
// neither has its password= values masked all the same.
func DSN(dsn string) string {
	var b strings.Builder
	last := 0
	for _, s := range passwordSpans(dsn) {
		b.WriteString(dsn[last:s.start])
		b.WriteString(Mask)
		last = s.end
	}
	b.WriteString(dsn[last:])
	return b.String()
}

// passwordSpans returns where the passwords of dsn lie, in order.
func passwordSpans(dsn string) []span {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if len(dsn) >= len(scheme) && strings.EqualFold(dsn[:len(scheme)], scheme) {
			return urlSpans(dsn, len(scheme))
		}
	}
	var spans []span
	for _, m := range keyValue.FindAllStringSubmatchIndex(dsn, -1) {
		spans = append(spans, span{m[2], m[3]})
	}
	return spans
}

// keyValue matches a password parameter of a key=value connection string;
// its group is the value: a single-quoted one with backslash escapes, or
// one up to the next space.
var keyValue = regexp.MustCompile(`(?i)(?:^|\s)(?:password|sslpassword)\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)`)

// urlSpans returns where the passwords of the connection URL dsn lie, its
// scheme ending at from. The user information ends at the last "@" before
// the path, so that a password with an "@" that should have been escaped
// is masked whole.
func urlSpans(dsn string, from int) []span {
	var spans []span
	end := len(dsn)
	if i := strings.IndexAny(dsn[from:], "/?#"); i >= 0 {
		end = from + i
	}
	if at := strings.LastIndex(dsn[from:end], "@"); at >= 0 {
		if colon := strings.Index(dsn[from:from+at], ":"); colon >= 0 {
			spans = append(spans, span{from + colon + 1, from + at})
		}
	}
	q := strings.Index(dsn[end:], "?")
	if q < 0 {
		return spans
	}
	start := end + q + 1
	stop := len(dsn)
	if h := strings.Index(dsn[start:], "#"); h >= 0 {
		stop = start + h
	}
	for start < stop {
		param := dsn[start:stop]
		if amp := strings.Index(param, "&"); amp >= 0 {
			param = param[:amp]
		}
		key, _, found := strings.Cut(param, "=")
		name, err := url.QueryUnescape(key)
		if err != nil {
			name = key
		}
		if found && passwordKeys[strings.ToLower(name)] {
			spans = append(spans, span{start + len(key) + 1, start + len(param)})
		}
		start += len(param) + 1
	}
	return spans
}

// minSecret is the length below which a password is not looked for in an
// error message: so short a string would match ordinary words.
const minSecret = 4

// Error returns err with a message that is safe to show for an error about
// the connection string dsn: a connection string that the message quotes
// the way pgx's parse errors do ("cannot parse `…`: why"), which pgx masks
// only where it can tell the password apart, is replaced by DSN(dsn), and
// every password of dsn (as written, and unescaped) is masked wherever
// else the message holds it. It wraps err, so errors.Is and errors.As see
// what they saw.
func Error(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	const quoted = "cannot parse `"
	if i := strings.Index(msg, quoted); i >= 0 {
		start := i + len(quoted)
		rest := "`"
		// The last "`: " ends the quoted string whatever the string holds.
		if j := strings.LastIndex(msg, "`: "); j >= start {
			rest = msg[j:]
		}
		msg = msg[:start] + DSN(dsn) + rest
	}
	for _, s := range passwordSpans(dsn) {
		for _, p := range forms(dsn[s.start:s.end]) {
			if len(p) >= minSecret {
				msg = strings.ReplaceAll(msg, p, Mask)
			}
		}
	}
	return &redactedError{msg: msg, err: err}
}

// forms are the ways a password written as raw may appear in a message:
// as written, without its quotes, and with its escapes undone.
func forms(raw string) []string {
	out := []string{raw}
	if unquoted, ok := strings.CutPrefix(raw, "'"); ok {
		unquoted = strings.TrimSuffix(unquoted, "'")
		out = append(out, unquoted, strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(unquoted))
	}
	if unescaped, err := url.PathUnescape(raw); err == nil {
		out = append(out, unescaped)
	}
	return out
}

// redactedError is an error shown with a redacted message.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// secretFlags are the flags whose values may hold a password, with the
// function that masks it.
var secretFlags = map[string]func(string) string{"--dsn": DSN, "--to-dsn": DSN, "--smtp": URL}

// Args returns a copy of the command line args with the value of every
// flag that may hold a password (--dsn, --to-dsn through DSN, --smtp
// through URL; as "--dsn VALUE" or "--dsn=VALUE") masked.
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		name, value, eq := strings.Cut(a, "=")
		switch {
		case eq && secretFlags[name] != nil:
			out[i] = name + "=" + secretFlags[name](value)
		case i > 0 && secretFlags[args[i-1]] != nil:
			out[i] = secretFlags[args[i-1]](a)
		default:
			out[i] = a
		}
	}
	return out
}

// URL returns raw, a URL such as smtp://user:password@host:port, with the
// password of its user information replaced by Mask: whatever lies
// between the first ':' after "://" and the last '@' of the authority.
// It works on strings that do not parse as URLs too.
func URL(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw
	}
	start := i + 3
	end := len(raw)
	if j := strings.IndexAny(raw[start:], "/?#"); j >= 0 {
		end = start + j
	}
	at := strings.LastIndex(raw[start:end], "@")
	if at < 0 {
		return raw
	}
	colon := strings.Index(raw[start:start+at], ":")
	if colon < 0 {
		return raw
	}
	return raw[:start+colon+1] + Mask + raw[start+at:]
}
