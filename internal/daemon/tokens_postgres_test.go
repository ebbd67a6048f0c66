package daemon_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/pgstore/pgtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestRevocationReachesEveryDaemon: two daemons share one PostgreSQL
// database; a token is used on both (so each has it in its cache), revoked
// on daemon A, and the very next request with it on daemon B is 401. A
// token's last use on B shows in the list that A answers once B wrote it
// (at B's shutdown at the latest).
func TestRevocationReachesEveryDaemon(t *testing.T) {
	dsn, _ := pgtest.FreshSchema(t)
	ctx := context.Background()
	short := servertest.ShortTempDir(t)
	a := startOnPostgres(t, dsn, filepath.Join(short, "a.sock"), freeAddr(t), "--no-demo")
	b := startOnPostgres(t, dsn, filepath.Join(short, "b.sock"), freeAddr(t), "--no-demo")
	admin := a.socketClient()
	issued, err := admin.IssueToken(ctx, api.TokenRequest{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := admin.CreateToken(ctx, "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	onA, onB := a.tcpClient(issued.Token), b.tcpClient(issued.Token)
	for _, c := range []*client.Client{onA, onB, onB} {
		if who, err := c.WhoAmI(ctx); err != nil || who.Actor != "alice" {
			t.Fatalf("whoami on %s before the revocation: %+v, %v", c.BaseURL, who, err)
		}
	}
	if err := admin.RevokeToken(ctx, issued.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client.Client{onB, onA} {
		if _, err := c.WhoAmI(ctx); engine.ErrorCode(err) != engine.CodeUnauthenticated {
			t.Fatalf("whoami on %s after the revocation on A: %v, want unauthenticated", c.BaseURL, err)
		}
	}
	if who, err := b.tcpClient(other).WhoAmI(ctx); err != nil || who.Actor != "bob" {
		t.Fatalf("bob's token on B: %+v, %v", who, err)
	}
	if code := b.stop(t); code != 0 {
		t.Fatalf("daemon B exited with %d", code)
	}
	list, err := admin.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Actor != "bob" || list[0].LastUsedAt.IsZero() {
		t.Fatalf("tokens after the revocation and bob's use on B: %+v", list)
	}
}
