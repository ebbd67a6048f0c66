package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The kinds of secret credentials. All are stored the same way: only the
// SHA-256 of the secret, with the actor it stands for.
const (
	// TokenAPI is a bearer token for the API. It has an id (TokenID), may
	// have an expiry, and lives until it expires or is revoked.
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
// that is an admin, when it expires (zero: never) and, for an API token,
// when it was last used (zero: not yet, or not since the version that
// records it), to a precision of TokenUseResolution.
type TokenRecord struct {
	Hash       string    `json:"hash"`
	Kind       string    `json:"kind"`
	Actor      string    `json:"actor"`
	Admin      bool      `json:"admin"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

// TokenIDPrefix is what TokenID hashes before a token's hash.
const TokenIDPrefix = "reserve-token-id:"

// TokenID returns the public id of the API token stored under hash: 32
// lowercase hex digits, the first 128 bits of the SHA-256 of TokenIDPrefix
// and the hash. It names the token in lists and revocations and reveals
// nothing that authenticates (neither the secret nor its hash can be had
// from it). Being derived rather than stored, every token has one, also a
// token that an earlier version created; stores index API tokens by it.
func TokenID(hash string) string {
	sum := sha256.Sum256([]byte(TokenIDPrefix + hash))
	return hex.EncodeToString(sum[:16])
}

// IsTokenID reports whether id has the form of a TokenID.
func IsTokenID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// MaxTokenLifetime bounds the lifetime an API token can be given: ten
// years (of 365 days).
const MaxTokenLifetime = 10 * 365 * 24 * time.Hour

// TokenSpec is what an admin asks of a new API token: its actor, whether
// it is an admin's, and its lifetime (zero: it never expires).
type TokenSpec struct {
	Actor     string
	Admin     bool
	ExpiresIn time.Duration
}

// TokenInfo is what anyone may see of an API token: never the secret or
// its hash.
type TokenInfo struct {
	ID         string    `json:"id"`
	Actor      string    `json:"actor"`
	Admin      bool      `json:"admin"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

// tokenInfo is the public view of an API token's record.
func tokenInfo(r TokenRecord) TokenInfo {
	return TokenInfo{ID: TokenID(r.Hash), Actor: r.Actor, Admin: r.Admin, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt}
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

// CreateToken makes a new API token for actor that never expires; see
// IssueToken.
func (e *Engine) CreateToken(ctx context.Context, actor string, admin bool) (string, error) {
	token, _, err := e.IssueToken(ctx, TokenSpec{Actor: actor, Admin: admin})
	return token, err
}

// IssueToken makes a new API token as spec asks, stores only its hash and
// returns the token, which is shown once and never again, with what
// anyone may see of it. A bad actor or lifetime is CodeRequestContract,
// naming the member of POST /api/v1/tokens, and stores nothing.
func (e *Engine) IssueToken(ctx context.Context, spec TokenSpec) (string, TokenInfo, error) {
	if err := ValidateActor(spec.Actor); err != nil {
		return "", TokenInfo{}, Errorf(CodeRequestContract, "member \"actor\": %v", err)
	}
	if spec.ExpiresIn < 0 || spec.ExpiresIn > MaxTokenLifetime || spec.ExpiresIn%time.Second != 0 {
		return "", TokenInfo{}, Errorf(CodeRequestContract, "member \"expires_in_seconds\" must be an integer from 1 to %d", int64(MaxTokenLifetime/time.Second))
	}
	token := newSecret(TokenPrefix)
	now := e.now().UTC().Truncate(time.Microsecond) // What every store keeps.
	rec := TokenRecord{Hash: HashToken(token), Kind: TokenAPI, Actor: spec.Actor, Admin: spec.Admin, CreatedAt: now}
	if spec.ExpiresIn > 0 {
		rec.ExpiresAt = now.Add(spec.ExpiresIn)
	}
	if err := e.store.Update(ctx, func(tx Tx) error { return tx.PutToken(rec) }); err != nil {
		return "", TokenInfo{}, fmt.Errorf("create token for %s: %w", spec.Actor, err)
	}
	return token, tokenInfo(rec), nil
}

// Tokens lists the API tokens (not login codes or browser sessions), oldest
// first. It writes the uses this engine noted first, so the list shows
// them.
func (e *Engine) Tokens(ctx context.Context) ([]TokenInfo, error) {
	for more := true; more; {
		var err error
		if _, more, err = e.FlushTokenUse(ctx, tokenUseBatch); err != nil {
			return nil, err
		}
	}
	var infos []TokenInfo
	err := e.store.View(ctx, func(tx Tx) error {
		infos = infos[:0]
		return tx.ForEachAPIToken(func(r TokenRecord) error {
			infos = append(infos, tokenInfo(r))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	slices.SortFunc(infos, func(a, b TokenInfo) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	return infos, nil
}

// RevokeToken deletes the API token id, so that it never authenticates
// again: the next request with it is refused, by this engine and by every
// other on the same store (see DefaultTokenCacheTTL; an engine that may
// share its store returns only once no other engine can still trust it).
// An id that names no API token, also one revoked already, is
// CodeUnknownToken.
func (e *Engine) RevokeToken(ctx context.Context, id string) error {
	unknown := Errorf(CodeUnknownToken, "no API token has the id %q (it may have been revoked already); 'reservectl admin token list' shows the ids", id)
	if !IsTokenID(id) {
		return unknown
	}
	var hash string
	err := e.store.Update(ctx, func(tx Tx) error {
		hash = ""
		rec, ok, err := tx.APIToken(id)
		if err != nil || !ok {
			return err
		}
		hash = rec.Hash
		return tx.DeleteToken(rec.Hash)
	})
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	if hash == "" {
		return unknown
	}
	e.tokens.forget(hash)
	e.use.forget(hash)
	if !e.exclusive {
		// Other engines may trust the token until their entries lapse.
		time.Sleep(e.tokens.ttl)
	}
	return nil
}

// tokenUseBatch bounds how many tokens' uses one write of FlushTokenUse
// records, so that the write stays short.
const tokenUseBatch = 256

// FlushTokenUse writes the last uses of API tokens that authentications
// noted since the last flush, up to limit tokens in one write transaction,
// and reports how many it wrote and whether more are waiting. A token
// revoked meanwhile is passed over, and a use never moves last_used_at
// back. The daemon calls it now and then in the background and at
// shutdown; uses it could not write are kept for the next call.
func (e *Engine) FlushTokenUse(ctx context.Context, limit int) (int, bool, error) {
	uses, more := e.use.take(limit)
	if len(uses) == 0 {
		return 0, more, nil
	}
	n := 0
	err := e.store.Update(ctx, func(tx Tx) error {
		n = 0
		for _, u := range uses {
			rec, ok, err := tx.Token(u.hash)
			if err != nil {
				return err
			}
			if !ok || rec.Kind != TokenAPI || !rec.LastUsedAt.Before(u.at) {
				continue
			}
			rec.LastUsedAt = u.at
			if err := tx.PutToken(rec); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		e.use.giveBack(uses)
		return 0, more, fmt.Errorf("record when tokens were last used: %w", err)
	}
	return n, more, nil
}

// Authenticate returns the principal of an API token, or CodeUnauthenticated:
// for an unknown or revoked token, and, saying so, for an expired one.
func (e *Engine) Authenticate(ctx context.Context, token string) (Principal, error) {
	return e.principalOf(ctx, token, TokenPrefix, TokenAPI, "the bearer token is not valid")
}

// CreateLoginCode makes a one-time login code for actor, valid for
// LoginCodeTTL, and returns it with its expiry. In the same transaction it
// removes up to credentialPurgeBatch expired login codes and sessions, so
// they do not pile up: every code is issued here, and every session comes
// from a code.
func (e *Engine) CreateLoginCode(ctx context.Context, actor string) (string, time.Time, error) {
	return e.CreateLoginCodeAs(ctx, Principal{Actor: actor})
}

// CreateLoginCodeAs is CreateLoginCode for the principal who: when
// who.Admin is set, the session the code opens is an admin's (the
// organizer's page needs one). Only an admin may ask for that; the
// caller checks it.
func (e *Engine) CreateLoginCodeAs(ctx context.Context, who Principal) (string, time.Time, error) {
	actor := who.Actor
	if err := ValidateActor(actor); err != nil {
		return "", time.Time{}, Errorf(CodeRequestContract, "%v", err)
	}
	code := newSecret(LoginCodePrefix)
	now := e.now().UTC()
	rec := TokenRecord{Hash: HashToken(code), Kind: TokenLoginCode, Actor: actor, Admin: who.Admin, CreatedAt: now, ExpiresAt: now.Add(LoginCodeTTL)}
	if err := e.putCode(ctx, rec, now); err != nil {
		return "", time.Time{}, fmt.Errorf("create login code for %s: %w", actor, err)
	}
	return code, rec.ExpiresAt, nil
}

// putCode stores the record of a new one-time code and, in the same
// write, removes up to credentialPurgeBatch credentials expired at now.
func (e *Engine) putCode(ctx context.Context, rec TokenRecord, now time.Time) error {
	stale, err := e.expiredCredentials(ctx, now, credentialPurgeBatch)
	if err != nil {
		return err
	}
	return e.store.Update(ctx, func(tx Tx) error {
		if _, err := deleteExpired(tx, stale, now); err != nil {
			return err
		}
		return tx.PutToken(rec)
	})
}

// PurgeExpiredCredentials removes up to limit credentials whose expiry has
// passed (login codes and browser sessions; an expired API token stays,
// listed and refused as expired, until an admin revokes it) and
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
			if r.Kind != TokenAPI && r.expiredAt(now) {
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
		if !ok || rec.Kind == TokenAPI || !rec.expiredAt(now) {
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
// The session is an admin's when the code was made for one. A code mailed
// to an address (CreateEmailCode) opens a session of the actor bound to the
// address, which is bound in the same transaction if it has none, so the
// binding and the code's use are one decision. A used, expired or unknown
// code is CodeUnauthenticated.
func (e *Engine) RedeemLoginCode(ctx context.Context, code string, ttl time.Duration) (session string, who Principal, expires time.Time, err error) {
	bad := Errorf(CodeUnauthenticated, "the login link is not valid: it was used already, has expired, or was mistyped; ask for a new one with 'reservectl login-link'")
	if !strings.HasPrefix(code, LoginCodePrefix) || len(code) > 100 {
		return "", Principal{}, time.Time{}, bad
	}
	hash := HashToken(code)
	session = newSecret(SessionPrefix)
	now := e.now().UTC()
	var decision error
	var bound Subject
	err = e.store.Update(ctx, func(tx Tx) error {
		decision, bound = nil, Subject{}
		rec, ok, err := tx.Token(hash)
		if err != nil {
			return err
		}
		if !ok || !isLoginCode(rec, hash) {
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
		actor, email, err := e.redeemedActor(tx, rec)
		if err != nil {
			return err
		}
		if email != "" {
			bound = EmailSubjectOf(email)
		}
		who = Principal{Actor: actor, Admin: rec.Admin}
		expires = now.Add(ttl)
		return tx.PutToken(TokenRecord{Hash: HashToken(session), Kind: TokenSession, Actor: actor, Admin: rec.Admin, CreatedAt: now, ExpiresAt: expires})
	})
	if err != nil {
		return "", Principal{}, time.Time{}, fmt.Errorf("redeem login code: %w", err)
	}
	if decision != nil {
		return "", Principal{}, time.Time{}, decision
	}
	if bound.Kind != "" {
		e.bindings.put(bound, who.Actor)
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
// principal if it has not expired. An API token is answered from the cache
// while its entry is fresh (see DefaultTokenCacheTTL), and its use is noted
// for FlushTokenUse.
func (e *Engine) principalOf(ctx context.Context, secret, prefix, kind, why string) (Principal, error) {
	bad := Errorf(CodeUnauthenticated, "%s", why)
	if !strings.HasPrefix(secret, prefix) || len(secret) > 100 {
		return Principal{}, bad
	}
	hash := HashToken(secret)
	if kind == TokenAPI {
		if c, ok := e.tokens.get(hash); ok {
			return e.apiPrincipal(hash, c)
		}
	}
	readAt := time.Now() // Before the read: an entry lapses no later than what it read.
	gen := e.tokens.generation()
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
	p := Principal{Actor: rec.Actor, Admin: rec.Admin}
	if kind == TokenAPI {
		c := &cachedToken{p: p, expires: rec.ExpiresAt, readAt: readAt}
		e.tokens.putUnlessForgotten(hash, c, gen)
		return e.apiPrincipal(hash, c)
	}
	if rec.expiredAt(e.now()) {
		return Principal{}, bad
	}
	return p, nil
}

// apiPrincipal returns the principal of the API token hash, unless it has
// expired, and notes its use.
func (e *Engine) apiPrincipal(hash string, c *cachedToken) (Principal, error) {
	now := e.now()
	if !c.expires.IsZero() && !now.Before(c.expires) {
		return Principal{}, Errorf(CodeUnauthenticated, "the bearer token expired at %s; ask an admin for a new one", c.expires.UTC().Format(time.RFC3339))
	}
	e.noteUse(hash, c, now.UTC().Truncate(time.Microsecond))
	return c.p, nil
}
