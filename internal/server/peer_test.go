package server_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
	"github.com/reserve/reserve/internal/testskip"
)

// envPeerSocket makes the test binary act as a socket client instead of
// running tests (see TestSocketPeerIsNotAdmin).
const envPeerSocket = "RESERVE_TEST_PEER_SOCKET"

func TestMain(m *testing.M) {
	if socket := os.Getenv(envPeerSocket); socket != "" {
		os.Exit(peerClient(socket))
	}
	os.Exit(m.Run())
}

// peerClient asks the daemon on socket who it is and tries two admin
// requests (a workshop, a login link to an admin's session), printing the
// principal and the error codes.
func peerClient(socket string) int {
	c := &client.Client{Socket: socket}
	ctx := context.Background()
	who, err := c.WhoAmI(ctx)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	_, _, err = c.PutWorkshop(ctx, "peer-workshop", engine.WorkshopSpec{Capacity: 1}, nil)
	_, linkErr := c.LoginLinkFor(ctx, api.LoginLinkRequest{Admin: true})
	fmt.Printf("%s %v %s %s\n", who.Actor, who.Admin, engine.ErrorCode(err), engine.ErrorCode(linkErr))
	return 0
}

// TestSocketPeerIsNotAdmin runs a socket client as the unprivileged uid
// 65534: the kernel's credentials name it, it is not an admin, and it may
// neither change a workshop nor get a login link to an admin's session.
func TestSocketPeerIsNotAdmin(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("RESERVE_CI") != "" {
			t.Fatal("running a client as another user needs root, and CI (RESERVE_CI) must run this test")
		}
		testskip.Missing(t, "root", "running a client as another user needs root")
	}
	h := servertest.Start(t, servertest.Options{})
	if err := os.Chmod(filepath.Dir(h.Socket), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.Socket, 0o666); err != nil {
		t.Fatal(err)
	}
	// The test binary may sit in a directory only root can enter.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(h.Socket), "peer")
	copyFile(t, self, bin)

	const uid = 65534
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{envPeerSocket + "=" + h.Socket, pathstest.QuickRaceExit()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peer client: %v\n%s", err, out)
	}
	want, err := server.SocketActorName(uid, func(uid uint32) (string, error) {
		u, err := user.LookupId(strconv.Itoa(int(uid)))
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), want+" false "+engine.CodeForbidden+" "+engine.CodeForbidden; got != want {
		t.Errorf("peer client said %q, want %q", got, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
