package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// credentialPurgeBatch bounds how many expired credentials an issue of a
// login code removes. Each issue adds at most two records that will expire
// (the code, and the session it may open; a redeemed code is deleted at
// once), so removing more than two at every issue keeps expired records
// from piling up, and a larger step soon clears what a store collected
// before, while keeping each step's write short.
const credentialPurgeBatch = 64

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

// expiredAt reports whether the credential has expired at now: it has an
// expiry and now is not before it. An expired credential never
// authenticates again.
func (r TokenRecord) expiredAt(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
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
// LoginCodeTTL, and returns it with its expiry. In the same transaction it
// removes up to credentialPurgeBatch expired login codes and sessions, so
// they do not pile up: every code is issued here, and every session comes
// from a code.
func (e *Engine) CreateLoginCode(ctx context.Context, actor string) (string, time.Time, error) {
	if err := ValidateActor(actor); err != nil {
		return "", time.Time{}, Errorf(CodeRequestContract, "%v", err)
	}
	code := newSecret(LoginCodePrefix)
	now := e.now().UTC()
	rec := TokenRecord{Hash: HashToken(code), Kind: TokenLoginCode, Actor: actor, CreatedAt: now, ExpiresAt: now.Add(LoginCodeTTL)}
	stale, err := e.expiredCredentials(ctx, now, credentialPurgeBatch)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("create login code for %s: %w", actor, err)
	}
	err = e.store.Update(ctx, func(tx Tx) error {
		if _, err := deleteExpired(tx, stale, now); err != nil {
			return err
		}
		return tx.PutToken(rec)
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("create login code for %s: %w", actor, err)
	}
	return code, rec.ExpiresAt, nil
}

// PurgeExpiredCredentials removes up to limit credentials whose expiry has
// passed (login codes and browser sessions; API tokens do not expire) and
// returns how many it removed. CreateLoginCode does this by itself; a
// caller with a backlog calls it until it returns fewer than limit.
func (e *Engine) PurgeExpiredCredentials(ctx context.Context, limit int) (int, error) {
	now := e.now().UTC()
	stale, err := e.expiredCredentials(ctx, now, limit)
	if err != nil || len(stale) == 0 {
		return 0, err
	}
	n := 0
	err = e.store.Update(ctx, func(tx Tx) error {
		var err error
		n, err = deleteExpired(tx, stale, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge expired credentials: %w", err)
	}
	return n, nil
}

// expiredCredentials returns the hashes of up to limit credentials that
// have expired at now. It looks in a read transaction, so the scan never
// holds the store's one writer; the write that removes them checks each
// again.
func (e *Engine) expiredCredentials(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var stale []string
	err := e.store.View(ctx, func(tx Tx) error {
		stale = stale[:0]
		err := tx.ForEachToken(func(r TokenRecord) error {
			if len(stale) >= limit {
				return errEnough
			}
			if r.expiredAt(now) {
				stale = append(stale, r.Hash)
			}
			return nil
		})
		if errors.Is(err, errEnough) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find expired credentials: %w", err)
	}
	return stale, nil
}

// deleteExpired deletes those of the credentials hashes that are still
// there and still expired at now, and returns how many it deleted.
func deleteExpired(tx Tx, hashes []string, now time.Time) (int, error) {
	n := 0
	for _, hash := range hashes {
		rec, ok, err := tx.Token(hash)
		if err != nil {
			return 0, err
		}
		if !ok || !rec.expiredAt(now) {
			continue
		}
		if err := tx.DeleteToken(hash); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
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
	if rec.expiredAt(e.now()) {
		return Principal{}, bad
	}
	p := Principal{Actor: rec.Actor, Admin: rec.Admin}
	if kind == TokenAPI && rec.ExpiresAt.IsZero() {
		e.tokens.put(hash, p)
	}
	return p, nil
}
