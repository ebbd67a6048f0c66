package enginetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/engine"
)

// suiteTokenTTL is how long the suite's engines trust a token they read:
// short, because a revocation waits that long.
const suiteTokenTTL = 20 * time.Millisecond

// testTokenLifecycle: a token issued with a lifetime expires and is then
// refused as expired; the list shows API tokens only, without secrets or
// hashes; a revoked token is refused at once, and revoking it again, or an
// id that names no token, is unknown_token; bad lifetimes store nothing.
func testTokenLifecycle(t *testing.T, h *harness) {
	forever, fi, err := h.eng.IssueToken(h.ctx, engine.TokenSpec{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	brief, bi, err := h.eng.IssueToken(h.ctx, engine.TokenSpec{Actor: "ops", Admin: true, ExpiresIn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if fi.ID != engine.TokenID(engine.HashToken(forever)) || !engine.IsTokenID(fi.ID) || !fi.ExpiresAt.IsZero() || !fi.CreatedAt.Equal(Now) {
		t.Errorf("issued token without lifetime: %+v", fi)
	}
	if want := Now.Add(time.Second + time.Hour); !bi.ExpiresAt.Equal(want) || !bi.Admin || bi.Actor != "ops" {
		t.Errorf("issued token with a lifetime of an hour: %+v, want expiry %v", bi, want)
	}
	// Neither a login code nor a session is listed.
	code, _, err := h.eng.CreateLoginCode(h.ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	code2, _, err := h.eng.CreateLoginCode(h.ctx, "dave")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := h.eng.RedeemLoginCode(h.ctx, code2, time.Hour); err != nil {
		t.Fatal(err)
	}
	list, err := h.eng.Tokens(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0] != fi || list[1] != bi {
		t.Fatalf("token list = %+v, want %+v and %+v", list, fi, bi)
	}
	raw, _ := json.Marshal(list)
	for _, secret := range []string{forever, brief, code} {
		if strings.Contains(string(raw), secret) || strings.Contains(string(raw), engine.HashToken(secret)) {
			t.Errorf("the token list %s shows a secret or its hash", raw)
		}
	}

	// Expiry, judged at every use, also from the cache.
	if _, err := h.eng.Authenticate(h.ctx, brief); err != nil {
		t.Fatalf("a token within its lifetime: %v", err)
	}
	h.advance(time.Hour)
	_, err = h.eng.Authenticate(h.ctx, brief)
	wantCode(t, err, engine.CodeUnauthenticated)
	if !strings.Contains(engine.ErrorMessage(err), "expired") {
		t.Errorf("an expired token's refusal says %q, not that it expired", engine.ErrorMessage(err))
	}
	// An expired API token is kept (listed, refused as expired) until it
	// is revoked; a purge of expired credentials leaves it.
	h.advance(time.Hour)
	if _, err := h.eng.PurgeExpiredCredentials(h.ctx, 64); err != nil {
		t.Fatal(err)
	}
	if list, err := h.eng.Tokens(h.ctx); err != nil || len(list) != 2 {
		t.Fatalf("tokens after a purge: %+v, %v", list, err)
	}

	// Revocation.
	if p, err := h.eng.Authenticate(h.ctx, forever); err != nil || p.Actor != "alice" {
		t.Fatalf("alice's token before revocation: %+v, %v", p, err)
	}
	if err := h.eng.RevokeToken(h.ctx, fi.ID); err != nil {
		t.Fatal(err)
	}
	_, err = h.eng.Authenticate(h.ctx, forever)
	wantCode(t, err, engine.CodeUnauthenticated)
	if strings.Contains(engine.ErrorMessage(err), "expired") {
		t.Errorf("a revoked token's refusal says it expired: %q", engine.ErrorMessage(err))
	}
	wantCode(t, h.eng.RevokeToken(h.ctx, fi.ID), engine.CodeUnknownToken)
	wantCode(t, h.eng.RevokeToken(h.ctx, strings.Repeat("0", 32)), engine.CodeUnknownToken)
	wantCode(t, h.eng.RevokeToken(h.ctx, "not-an-id"), engine.CodeUnknownToken)
	wantCode(t, h.eng.RevokeToken(h.ctx, engine.HashToken(brief)), engine.CodeUnknownToken)
	if list, err := h.eng.Tokens(h.ctx); err != nil || len(list) != 1 || list[0].ID != bi.ID {
		t.Fatalf("tokens after revoking alice's: %+v, %v", list, err)
	}
	if err := h.eng.RevokeToken(h.ctx, bi.ID); err != nil {
		t.Fatal(err)
	}

	// Bad input stores nothing.
	before := h.tokens()
	for _, spec := range []engine.TokenSpec{
		{Actor: "alice", ExpiresIn: -time.Second},
		{Actor: "alice", ExpiresIn: engine.MaxTokenLifetime + time.Second},
		{Actor: "alice", ExpiresIn: time.Millisecond},
		{Actor: "Not An Actor", ExpiresIn: time.Hour},
	} {
		_, _, err := h.eng.IssueToken(h.ctx, spec)
		wantCode(t, err, engine.CodeRequestContract)
	}
	if after := h.tokens(); len(after) != len(before) {
		t.Errorf("refused token requests stored credentials: %d before, %d after", len(before), len(after))
	}
}

// testRevocationReachesEveryEngine: two engines share the store, as two
// daemons share a database; one has just read the token (and keeps it in
// its cache) when the other revokes it, and its next authentication is
// refused.
func testRevocationReachesEveryEngine(t *testing.T, h *harness) {
	a := h.engineOn(h.store)
	b := h.engineOn(h.store)
	tok, info, err := a.IssueToken(h.ctx, engine.TokenSpec{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(h.ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeToken(h.ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	_, err = b.Authenticate(h.ctx, tok)
	wantCode(t, err, engine.CodeUnauthenticated)
}

// testTokenLastUsed: an authentication notes the token's use in memory;
// FlushTokenUse writes it, at most once per TokenUseResolution per token,
// never moves it back and never brings back a revoked token.
func testTokenLastUsed(t *testing.T, h *harness) {
	tok, info, err := h.eng.IssueToken(h.ctx, engine.TokenSpec{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		t.Helper()
		var at time.Time
		err := h.store.View(h.ctx, func(tx engine.Tx) error {
			r, ok, err := tx.APIToken(info.ID)
			if !ok && err == nil {
				t.Fatalf("token %s not found by id", info.ID)
			}
			at = r.LastUsedAt
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	flush := func(want int) {
		t.Helper()
		n, more, err := h.eng.FlushTokenUse(h.ctx, 10)
		if err != nil || n != want || more {
			t.Fatalf("FlushTokenUse = %d, %t, %v; want %d, false", n, more, err, want)
		}
	}
	flush(0)
	if at := lastUsed(); !at.IsZero() {
		t.Fatalf("an unused token was last used at %v", at)
	}
	use := func() {
		t.Helper()
		if _, err := h.eng.Authenticate(h.ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	h.advance(time.Minute)
	first := h.now()
	use()
	use()
	if at := lastUsed(); !at.IsZero() {
		t.Fatalf("an authentication wrote last_used_at (%v) before a flush", at)
	}
	flush(1)
	if at := lastUsed(); !at.Equal(first) {
		t.Fatalf("last used at %v, want %v", at, first)
	}
	// Within the resolution nothing more is noted.
	h.advance(engine.TokenUseResolution - time.Second)
	use()
	flush(0)
	h.advance(time.Second)
	use()
	flush(1)
	if at, want := lastUsed(), first.Add(engine.TokenUseResolution); !at.Equal(want) {
		t.Fatalf("last used at %v, want %v", at, want)
	}
	if list, err := h.eng.Tokens(h.ctx); err != nil || len(list) != 1 || !list[0].LastUsedAt.Equal(first.Add(engine.TokenUseResolution)) {
		t.Fatalf("token list = %+v, %v", list, err)
	}
	// The list writes what was noted before it reads.
	h.advance(engine.TokenUseResolution)
	use()
	if list, err := h.eng.Tokens(h.ctx); err != nil || len(list) != 1 || !list[0].LastUsedAt.Equal(h.now()) {
		t.Fatalf("token list after a use = %+v, %v; want last used at %v", list, err, h.now())
	}
	// Another engine's older use does not move it back, and a use noted
	// before a revocation does not bring the token back.
	other := h.engineOn(h.store)
	h.advance(engine.TokenUseResolution)
	if _, err := other.Authenticate(h.ctx, tok); err != nil {
		t.Fatal(err)
	}
	h.advance(engine.TokenUseResolution)
	use()
	flush(1)
	if n, _, err := other.FlushTokenUse(h.ctx, 10); err != nil || n != 0 {
		t.Fatalf("an older use on another engine: wrote %d, %v", n, err)
	}
	if at := lastUsed(); !at.Equal(h.now()) {
		t.Fatalf("last used at %v after an older use elsewhere, want %v", at, h.now())
	}
	h.advance(engine.TokenUseResolution)
	use()
	if err := other.RevokeToken(h.ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	flush(0)
	if n := len(h.tokens()); n != 0 {
		t.Fatalf("the store holds %d credentials after the revocation and a flush", n)
	}
}
