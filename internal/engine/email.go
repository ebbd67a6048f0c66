package engine

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/mail"
	"strings"
	"time"
)

// SubjectEmail is a person who proved to own an email address by opening
// a link mailed to it; its id is the address, lowercased.
const SubjectEmail = "email"

// TokenEmailCode is the one-time code of a sign-in link mailed to an
// address. Its record keeps the address (lowercased) where other
// credentials keep their actor: the address is bound to an actor only
// when the link is redeemed, so an address that never opens its link
// never gets one. Its record has the fields of every credential, so
// every store keeps it as it keeps a login code; a reserved that does not
// know the kind refuses the code and purges it once it has expired, as it
// does any login code.
const TokenEmailCode = "email_code"

// EmailCodeTTL bounds how long a mailed sign-in link can be used: long
// enough for a mail to arrive and be read.
const EmailCodeTTL = 15 * time.Minute

// MaxEmailLen is the longest email address accepted, in bytes: the limit
// of a forward path in SMTP.
const MaxEmailLen = 254

// NormalizeEmail checks that addr is one plain email address
// ("local@domain", no display name, no angle brackets) of at most
// MaxEmailLen bytes and returns it lowercased: the id of its subject.
// Everything else is CodeRequestContract about the member "email".
func NormalizeEmail(addr string) (string, error) {
	bad := func(why string) error {
		return Errorf(CodeRequestContract, "member \"email\" must be one email address such as ada@example.org: %s", why)
	}
	if len(addr) > MaxEmailLen {
		return "", bad(fmt.Sprintf("it has %d bytes, more than %d", len(addr), MaxEmailLen))
	}
	parsed, err := mail.ParseAddress(addr)
	if err != nil {
		return "", bad(fmt.Sprintf("%q does not parse (%v)", Truncate(addr, 80), err))
	}
	if parsed.Name != "" || parsed.Address != addr {
		return "", bad(fmt.Sprintf("%q has more than the address itself", Truncate(addr, 80)))
	}
	local, domain, ok := strings.Cut(parsed.Address, "@")
	if !ok || local == "" || !strings.Contains(domain, ".") || strings.ContainsAny(parsed.Address, " \t\r\n") {
		return "", bad(fmt.Sprintf("%q has no local part, or no domain with a dot", Truncate(addr, 80)))
	}
	return strings.ToLower(parsed.Address), nil
}

// EmailSubjectOf is the subject of a verified email address, normalized
// by NormalizeEmail.
func EmailSubjectOf(addr string) Subject { return Subject{Kind: SubjectEmail, ID: addr} }

// EmailActorName is the actor name an email address wants when it is
// bound for the first time: its local part lowercased, each run of
// characters an actor name may not hold made one '-', cut to fit an actor
// name, with "mail-" before it when it does not start with a letter, is
// too short, or starts like the name of a Unix socket peer. Another subject holding the name makes it numbered (ActorOf).
func EmailActorName(addr string) string {
	local, _, _ := strings.Cut(EmailMailbox(strings.ToLower(addr)), "@")
	var b strings.Builder
	dash := false
	for _, c := range []byte(local) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '_' {
			b.WriteByte(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) < 2 || name[0] < 'a' || name[0] > 'z' || hasReservedPrefix(name) {
		name = "mail-" + name
	}
	name = strings.TrimRight(name[:min(len(name), maxActorLen)], "-")
	if len(name) < 2 {
		name = "mail"
	}
	return name
}

// EmailMailbox is addr without its sub-address, if it has one:
// "ada+reserve@example.org" is "ada@example.org". A sub-address names
// the same person and reaches the same mailbox.
func EmailMailbox(addr string) string {
	local, domain, _ := strings.Cut(addr, "@")
	if i := strings.IndexByte(local, '+'); i > 0 {
		local = local[:i]
	}
	return local + "@" + domain
}

// CreateEmailCode makes a one-time code for a sign-in link mailed to addr
// (as NormalizeEmail makes it), valid for EmailCodeTTL, and returns it
// with its expiry. It binds nothing: RedeemLoginCode binds the address
// when the link is opened. Like CreateLoginCode it removes some expired
// credentials in the same write.
func (e *Engine) CreateEmailCode(ctx context.Context, addr string) (string, time.Time, error) {
	addr, err := NormalizeEmail(addr)
	if err != nil {
		return "", time.Time{}, err
	}
	code := newSecret(LoginCodePrefix)
	now := e.now().UTC()
	rec := TokenRecord{Hash: HashToken(code), Kind: TokenEmailCode, Actor: addr, CreatedAt: now, ExpiresAt: now.Add(EmailCodeTTL)}
	if err := e.putCode(ctx, rec, now); err != nil {
		return "", time.Time{}, fmt.Errorf("create sign-in code for an email address: %w", err)
	}
	return code, rec.ExpiresAt, nil
}

// redeemedActor returns the actor a login code record opens a session
// for: its actor, or, for a code mailed to an address, the actor bound to
// the address, binding it now (in tx) if it has none.
func (e *Engine) redeemedActor(tx Tx, rec TokenRecord) (actor, email string, err error) {
	if rec.Kind != TokenEmailCode {
		return rec.Actor, "", nil
	}
	b, err := bind(tx, EmailSubjectOf(rec.Actor), EmailActorName(rec.Actor), e.utcNow)
	if err != nil {
		return "", "", fmt.Errorf("bind %s: %w", EmailSubjectOf(rec.Actor), err)
	}
	return b.Actor, rec.Actor, nil
}

// isLoginCode reports whether rec is a code that RedeemLoginCode takes.
func isLoginCode(rec TokenRecord, hash string) bool {
	return (rec.Kind == TokenLoginCode || rec.Kind == TokenEmailCode) && subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) == 1
}

// EmailOf returns the verified email address of actor: the address it is
// bound to when it is the actor of an email subject, else "".
func (e *Engine) EmailOf(ctx context.Context, actor string) (string, error) {
	b, _, err := e.SubjectOf(ctx, actor)
	return EmailOfBinding(b), err
}

// EmailOfBinding returns the verified email address that binding b gives
// its actor, "" for a subject of another kind.
func EmailOfBinding(b Binding) string {
	if b.Kind == SubjectEmail {
		return b.Subject
	}
	return ""
}
