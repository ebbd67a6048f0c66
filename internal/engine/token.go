package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// The kinds of secret credentials. All are stored the same way: only the
// SHA-256 of the secret, with the actor it stands for.
const (
	// TokenAPI is a bearer token for the API; it never expires.
	TokenAPI = "api"
	// TokenLoginCode is a one-time code in a browser login link.
	TokenLoginCode = "login_code"
	// TokenSession is a browser session, kept by the form in its tab.
	TokenSession = "session"
)

// The prefixes of the secrets, so a leaked one is easy to recognise.
const (
	TokenPrefix     = "rsv_"
	LoginCodePrefix = "rlc_"
	SessionPrefix   = "rss_"
)

// LoginCodeTTL bounds how long a login link can be used.
const LoginCodeTTL = 5 * time.Minute

// TokenRecord is what the store keeps of a secret credential: never the
// secret, only its SHA-256, with its kind, the actor it authenticates, whether
// that is an admin, and when it expires (zero: never).
type TokenRecord struct {
	Hash      string    `json:"hash"`
	Kind      string    `json:"kind"`
	Actor     string    `json:"actor"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// HashToken returns the hex SHA-256 under which a secret is stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// newSecret returns prefix followed by 256 random bits in base64url.
func newSecret(prefix string) string {
	var raw [32]byte
	rand.Read(raw[:]) // crypto/rand.Read never fails.
	return prefix + base64.RawURLEncoding.EncodeToString(raw[:])
}

// CreateToken makes a new API token for actor, stores only its hash and
// returns the token, which is shown once and never again.
func (e *Engine) CreateToken(ctx context.Context, actor string, admin bool) (string, error) {
	if err := ValidateActor(actor); err != nil {
		return "", Errorf(CodeRequestContract, "member \"actor\": %v", err)
	}
	token := newSecret(TokenPrefix)
	rec := TokenRecord{Hash: HashToken(token), Kind: TokenAPI, Actor: actor, Admin: admin, CreatedAt: e.now().UTC()}
	if err := e.store.Update(ctx, func(tx Tx) error { return tx.PutToken(rec) }); err != nil {
		return "", fmt.Errorf("create token for %s: %w", actor, err)
	}
	return token, nil
}

// Authenticate returns the principal of an API token, or CodeUnauthenticated.
func (e *Engine) Authenticate(ctx context.Context, token string) (Principal, error) {
	return e.principalOf(ctx, token, TokenPrefix, TokenAPI, "the bearer token is not valid")
}

// CreateLoginCode makes a one-time login code for actor, valid for
// LoginCodeTTL, and returns it with its expiry.
func (e *Engine) CreateLoginCode(ctx context.Context, actor string) (string, time.Time, error) {
	if err := ValidateActor(actor); err != nil {
		return "", time.Time{}, Errorf(CodeRequestContract, "%v", err)
	}
	code := newSecret(LoginCodePrefix)
	now := e.now().UTC()
	rec := TokenRecord{Hash: HashToken(code), Kind: TokenLoginCode, Actor: actor, CreatedAt: now, ExpiresAt: now.Add(LoginCodeTTL)}
	if err := e.store.Update(ctx, func(tx Tx) error { return tx.PutToken(rec) }); err != nil {
		return "", time.Time{}, fmt.Errorf("create login code for %s: %w", actor, err)
	}
	return code, rec.ExpiresAt, nil
}

// RedeemLoginCode consumes a login code and opens a browser session of ttl
// for its actor, in one transaction, so a code opens at most one session.
// Sessions are never admin. A used, expired or unknown code is
// CodeUnauthenticated.
func (e *Engine) RedeemLoginCode(ctx context.Context, code string, ttl time.Duration) (session string, who Principal, expires time.Time, err error) {
	bad := Errorf(CodeUnauthenticated, "the login link is not valid: it was used already, has expired, or was mistyped; ask for a new one with 'reservectl login-link'")
	if !strings.HasPrefix(code, LoginCodePrefix) || len(code) > 100 {
		return "", Principal{}, time.Time{}, bad
	}
	hash := HashToken(code)
	session = newSecret(SessionPrefix)
	now := e.now().UTC()
	var decision error
	err = e.store.Update(ctx, func(tx Tx) error {
		decision = nil
		rec, ok, err := tx.Token(hash)
		if err != nil {
			return err
		}
		if !ok || rec.Kind != TokenLoginCode || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) != 1 {
			decision = bad
			return nil
		}
		if err := tx.DeleteToken(hash); err != nil {
			return err
		}
		if !now.Before(rec.ExpiresAt) {
			decision = bad
			return nil
		}
		who = Principal{Actor: rec.Actor}
		expires = now.Add(ttl)
		return tx.PutToken(TokenRecord{Hash: HashToken(session), Kind: TokenSession, Actor: rec.Actor, CreatedAt: now, ExpiresAt: expires})
	})
	if err != nil {
		return "", Principal{}, time.Time{}, fmt.Errorf("redeem login code: %w", err)
	}
	if decision != nil {
		return "", Principal{}, time.Time{}, decision
	}
	return session, who, expires, nil
}

// SessionPrincipal returns the principal of a live browser session, or
// CodeUnauthenticated.
func (e *Engine) SessionPrincipal(ctx context.Context, session string) (Principal, error) {
	return e.principalOf(ctx, session, SessionPrefix, TokenSession, "the session has ended; sign in again")
}

// EndSession forgets a browser session. Ending an unknown session is not an
// error.
func (e *Engine) EndSession(ctx context.Context, session string) error {
	if !strings.HasPrefix(session, SessionPrefix) {
		return nil
	}
	hash := HashToken(session)
	err := e.store.Update(ctx, func(tx Tx) error {
		rec, ok, err := tx.Token(hash)
		if err != nil || !ok || rec.Kind != TokenSession {
			return err
		}
		return tx.DeleteToken(hash)
	})
	if err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// principalOf looks up a secret of the given prefix and kind and returns its
// principal if it has not expired.
func (e *Engine) principalOf(ctx context.Context, secret, prefix, kind, why string) (Principal, error) {
	bad := Errorf(CodeUnauthenticated, "%s", why)
	if !strings.HasPrefix(secret, prefix) || len(secret) > 100 {
		return Principal{}, bad
	}
	hash := HashToken(secret)
	if kind == TokenAPI {
		if p, ok := e.tokens.get(hash); ok {
			return p, nil
		}
	}
	var rec TokenRecord
	var ok bool
	err := e.store.View(ctx, func(tx Tx) error {
		var err error
		rec, ok, err = tx.Token(hash)
		return err
	})
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	if !ok || rec.Kind != kind || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) != 1 {
		return Principal{}, bad
	}
	if !rec.ExpiresAt.IsZero() && !e.now().Before(rec.ExpiresAt) {
		return Principal{}, bad
	}
	p := Principal{Actor: rec.Actor, Admin: rec.Admin}
	if kind == TokenAPI && rec.ExpiresAt.IsZero() {
		e.tokens.put(hash, p)
	}
	return p, nil
}
