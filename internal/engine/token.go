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

// TokenPrefix starts every API token, so leaked tokens are easy to spot.
const TokenPrefix = "rsv_"

// TokenRecord is what the store keeps of an API token: never the token, only
// its SHA-256, with the actor it authenticates and whether that is an admin.
type TokenRecord struct {
	Hash      string    `json:"hash"`
	Actor     string    `json:"actor"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"created_at"`
}

// HashToken returns the hex SHA-256 under which a token is stored.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateToken makes a new random API token (256 bits) for actor, stores only
// its hash and returns the token, which is shown once and never again.
func (e *Engine) CreateToken(ctx context.Context, actor string, admin bool) (string, error) {
	if err := ValidateActor(actor); err != nil {
		return "", Errorf(CodeRequestContract, "member \"actor\": %v", err)
	}
	var raw [32]byte
	rand.Read(raw[:]) // crypto/rand.Read never fails.
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	rec := TokenRecord{Hash: HashToken(token), Actor: actor, Admin: admin, CreatedAt: e.now().UTC()}
	if err := e.store.Update(ctx, func(tx Tx) error { return tx.PutToken(rec) }); err != nil {
		return "", fmt.Errorf("create token for %s: %w", actor, err)
	}
	return token, nil
}

// Authenticate returns the principal of an API token, or CodeUnauthenticated.
func (e *Engine) Authenticate(ctx context.Context, token string) (Principal, error) {
	bad := Errorf(CodeUnauthenticated, "the bearer token is not valid")
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 100 {
		return Principal{}, bad
	}
	hash := HashToken(token)
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
	if !ok || subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) != 1 {
		return Principal{}, bad
	}
	return Principal{Actor: rec.Actor, Admin: rec.Admin}, nil
}
