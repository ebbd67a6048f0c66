//go:build linux

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/paths"
	"github.com/reserve/reserve/internal/paths/pathstest"
	"github.com/reserve/reserve/internal/testskip"
)

// The tests of this file change what the user database says of one uid
// while a real reserved serves it: they bind-mount files over /etc/passwd
// and /etc/nsswitch.conf, which only a mount namespace of their own keeps
// from the rest of the machine.

// mountNSEnv marks the run of the test binary in a mount namespace of its
// own (inMountNamespace).
const mountNSEnv = "RESERVE_TEST_MOUNT_NS"

// pureGoBinEnv names a reserved built without cgo, whose os/user reads
// /etc/passwd itself (the release packages are built so); the default
// build asks the C library, which follows /etc/nsswitch.conf.
const pureGoBinEnv = "RESERVE_TEST_RESERVED_PUREGO_BIN"

// ghostUID is the uid whose account the tests name ghost, rename, remove,
// or fail to look up. The host's user database must not know it.
const ghostUID = 55555

// ghostLine is ghostUID's entry in /etc/passwd, named name.
func ghostLine(name string) string {
	return fmt.Sprintf("%s:x:%d:%d::/nonexistent:/usr/sbin/nologin\n", name, ghostUID, ghostUID)
}

// inMountNamespace reports whether the test runs in a mount namespace of
// its own, where it may mount over files of /etc. Outside one, it runs the
// test again in one (a copy of the test binary, started with
// unshare(CLONE_NEWNS) and / made private, so that no mount reaches the
// host), fails the test if that run does not pass, and returns false.
// Without root, or where the kernel refuses a mount namespace, it skips
// the test, and fails it when RESERVE_CI is set.
func inMountNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(mountNSEnv) != "" {
		own, _ := os.Readlink("/proc/self/ns/mnt")
		host, _ := os.Readlink("/proc/1/ns/mnt")
		if own == "" || own == host {
			t.Fatalf("refusing to mount over /etc: the mount namespace %q is the host's (%q)", own, host)
		}
		return true
	}
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv("RESERVE_CI") != "" {
			t.Fatalf("%s, and CI (RESERVE_CI) must run this test", why)
		}
		testskip.Missing(t, "root", "%s: run the tests as root to check that a socket peer's actor survives a rename, a removal and a failing user database (CI, with RESERVE_CI set, must)", why)
	}
	if os.Getuid() != 0 {
		unavailable("mounting over /etc/passwd in a mount namespace of its own needs root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), pathstest.QuickRaceExit(), mountNSEnv+"=1", reservedBinEnv+"="+reservedBin, pureGoBinEnv+"="+pureGoReserved(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		unavailable(fmt.Sprintf("the kernel refused a mount namespace of its own (%v)", err))
	}
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) || bytes.Contains(out, []byte("--- SKIP")) {
		t.Fatalf("in a mount namespace of its own: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "--- ") {
			t.Logf("in a mount namespace of its own: %s", strings.TrimSpace(line))
		}
	}
	return false
}

var (
	pureGoOnce sync.Once
	pureGoBin  string
	pureGoErr  error
)

// pureGoReserved returns a reserved built with CGO_ENABLED=0, built once
// beside reservedBin unless pureGoBinEnv names one.
func pureGoReserved(t *testing.T) string {
	t.Helper()
	pureGoOnce.Do(func() {
		if pureGoBin = os.Getenv(pureGoBinEnv); pureGoBin != "" {
			return
		}
		pureGoBin = filepath.Join(filepath.Dir(reservedBin), "reserved-purego")
		cmd := exec.Command("go", "build", "-o", pureGoBin, "github.com/reserve/reserve/cmd/reserved")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			pureGoErr = fmt.Errorf("build reserved without cgo: %v\n%s", err, out)
		}
	})
	if pureGoErr != nil {
		t.Fatal(pureGoErr)
	}
	return pureGoBin
}

// builds are the two ways reserved looks up a user: through the C library
// (and so /etc/nsswitch.conf), and Go's own reading of /etc/passwd.
func builds() []struct{ name, bin string } {
	return []struct{ name, bin string }{{"cgo", reservedBin}, {"purego", os.Getenv(pureGoBinEnv)}}
}

// identityHarness is a reserved serving on a socket that ghostUID may use,
// in the test's mount namespace, where the test decides what the user
// database says of ghostUID.
type identityHarness struct {
	t        *testing.T
	dir      string // Everyone may enter it: the socket and the copy of the test binary.
	home     string // ghostUID's home, with its reservectl state file.
	bin      string // The copy of the test binary that ghostUID runs.
	db       string
	reserved string
	passwd   []byte   // /etc/passwd as the host has it.
	mounts   []string // The files mounted over, newest last.
	p        *proc
	n        int // Files written so far, for their names.
}

// newIdentityHarness starts the reserved at bin with the user database
// naming ghostUID ghost, and a workshop api-ws besides the demo workshop.
func newIdentityHarness(t *testing.T, bin string) *identityHarness {
	t.Helper()
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^[^:]*:[^:]*:` + strconv.Itoa(ghostUID) + `:`).Match(passwd) {
		t.Fatalf("the host's /etc/passwd names uid %d, which these tests need unknown", ghostUID)
	}
	dir, err := os.MkdirTemp("", "reserved-identity")
	if err != nil {
		t.Fatal(err)
	}
	h := &identityHarness{t: t, dir: dir, home: filepath.Join(dir, "home"),
		db: filepath.Join(t.TempDir(), "reserved.db"), reserved: bin, passwd: passwd}
	t.Cleanup(func() {
		h.unmountAll()
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(h.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(h.home, ghostUID, ghostUID); err != nil {
		t.Fatal(err)
	}
	h.bin = pathstest.CopyTestBinary(t, dir)
	h.usePasswd("ghost")
	socket := filepath.Join(dir, "r.sock")
	h.p = launchProgram(t, env(filepath.Dir(h.db)), bin, "serve", "--db", h.db, "--socket", socket, "--socket-mode", "0666",
		"--listen", "127.0.0.1:0", "--log-format", "json")
	h.p.socket = socket
	h.p.waitServing(t)
	if _, _, err := h.p.socketClient().PutWorkshop(context.Background(), "api-ws", engine.WorkshopSpec{Capacity: 3, MaxQuantity: 2}, nil); err != nil {
		t.Fatal(err)
	}
	return h
}

// file writes data to a new file of the harness and returns its path.
func (h *identityHarness) file(data []byte) string {
	h.t.Helper()
	h.n++
	path := filepath.Join(h.dir, fmt.Sprintf("etc-%d", h.n))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		h.t.Fatal(err)
	}
	return path
}

func (h *identityHarness) mount(src, target string) {
	h.t.Helper()
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		h.t.Fatalf("bind-mount %s over %s: %v", src, target, err)
	}
	h.mounts = append(h.mounts, target)
}

func (h *identityHarness) unmountAll() {
	for i := len(h.mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(h.mounts[i], 0); err != nil {
			h.t.Errorf("unmount %s: %v", h.mounts[i], err)
		}
	}
	h.mounts = nil
}

// usePasswd makes /etc/passwd the host's with ghostUID named name, or
// without ghostUID for "".
func (h *identityHarness) usePasswd(name string) {
	h.t.Helper()
	h.unmountAll()
	if name != "" {
		h.mount(h.file(append(bytes.Clone(h.passwd), ghostLine(name)...)), "/etc/passwd")
	}
}

// failLookups makes every lookup of a user fail with an error other than
// "no such user": /etc/passwd becomes a socket, which open refuses with
// ENXIO, and /etc/nsswitch.conf asks the files alone for users, so the C
// library does not go on to another source that answers "no such user".
func (h *identityHarness) failLookups() {
	h.t.Helper()
	h.unmountAll()
	sock := filepath.Join(h.dir, fmt.Sprintf("passwd-%d.sock", h.n))
	staleSocket(h.t, sock)
	nss, err := os.ReadFile("/etc/nsswitch.conf")
	if err != nil {
		h.t.Fatal(err)
	}
	nss = regexp.MustCompile(`(?m)^passwd:.*$`).ReplaceAll(nss, []byte("passwd: files"))
	h.mount(h.file(nss), "/etc/nsswitch.conf")
	h.mount(sock, "/etc/passwd")
}

// asGhost runs the copy of the test binary as ghostUID in role with args.
func (h *identityHarness) asGhost(role string, args ...string) (code int, stdout, stderr string) {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.home
	cmd.Env = []string{roleEnv + "=" + role, "PATH=" + os.Getenv("PATH"), "HOME=" + h.home, pathstest.QuickRaceExit(),
		paths.EnvSocket + "=" + h.p.socket, cli.EnvState + "=" + filepath.Join(h.home, "intent.json")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: ghostUID, Gid: ghostUID}}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		h.t.Fatalf("run %s as uid %d: %v", role, ghostUID, err)
	}
	return code, out.String(), errOut.String()
}

// request sends one raw API request as ghostUID, on a connection of its
// own.
func (h *identityHarness) request(method, path, key, body string) rawAnswer {
	h.t.Helper()
	arg, _ := json.Marshal(rawRequest{Socket: h.p.socket, Method: method, Path: path, Key: key, Body: body})
	code, out, errOut := h.asGhost(roleRequest, string(arg))
	var a rawAnswer
	if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil {
		h.t.Fatalf("%s %s as uid %d: exit %d, %v\n%s%s", method, path, ghostUID, code, err, out, errOut)
	}
	return a
}

// whoami is the actor of ghostUID, or the error code of the answer.
func (h *identityHarness) whoami() string {
	h.t.Helper()
	a := h.request("GET", api.PathWhoAmI, "", "")
	var who struct{ Actor, Code string }
	if err := json.Unmarshal([]byte(a.Body), &who); err != nil {
		h.t.Fatalf("whoami: %d %s: %v", a.Status, a.Body, err)
	}
	return who.Actor + who.Code
}

// reservectl runs reservectl as ghostUID.
func (h *identityHarness) reservectl(args ...string) (code int, stdout, stderr string) {
	h.t.Helper()
	return h.asGhost(roleReservectl, args...)
}

// wantPlaces fails unless each workshop counts n reserved places.
func (h *identityHarness) wantPlaces(n int) {
	h.t.Helper()
	for _, id := range []string{"api-ws", daemon.DemoWorkshop} {
		w, err := h.p.socketClient().Workshop(context.Background(), id)
		if err != nil || w.Reserved != n {
			h.t.Errorf("workshop %s: reserved %d, %v; want %d", id, w.Reserved, err, n)
		}
	}
}

// stopAndCheck stops reserved and runs reserved check on its database,
// which must find nothing.
func (h *identityHarness) stopAndCheck() {
	h.t.Helper()
	if code := h.p.stop(h.t); code != 0 {
		h.t.Fatalf("reserved exit code %d", code)
	}
	out, err := exec.Command(h.reserved, "check", "--db", h.db).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("no findings")) {
		h.t.Errorf("reserved check: %v\n%s", err, out)
	}
}

const apiReservation = `{"workshop":"api-ws","quantity":1}`

// testActorSurvives: ghostUID, named ghost, reserves once through the raw
// API and once with reservectl; after change (a rename, a removal) it is
// still unix-ghost on a new connection, the raw retry with the same key
// replays the first answer, and reservectl reserve --retry replays its
// reservation: one reservation in each workshop.
func testActorSurvives(t *testing.T, change func(h *identityHarness)) {
	for _, b := range builds() {
		t.Run(b.name, func(t *testing.T) {
			h := newIdentityHarness(t, b.bin)
			key := uuid.NewString()
			first := h.request("POST", api.PathReservations, key, apiReservation)
			if first.Status != 201 || first.Replayed != "false" {
				t.Fatalf("first reservation = %+v", first)
			}
			if who := h.whoami(); who != "unix-ghost" {
				t.Fatalf("whoami of uid %d named ghost = %s, want unix-ghost", ghostUID, who)
			}
			if code, out, errOut := h.reservectl("reserve", "--workshop", daemon.DemoWorkshop, "--quantity", "1"); code != 0 {
				t.Fatalf("reservectl reserve: exit %d\n%s%s", code, out, errOut)
			}
			change(h)
			if who := h.whoami(); who != "unix-ghost" {
				t.Errorf("whoami after the change = %s, want unix-ghost", who)
			}
			again := h.request("POST", api.PathReservations, key, apiReservation)
			if again.Status != 201 || again.Replayed != "true" || again.Body != first.Body {
				t.Errorf("retry with the same key after the change = %+v, want the first answer %s replayed", again, first.Body)
			}
			code, out, errOut := h.reservectl("reserve", "--retry")
			if code != 0 || !strings.HasPrefix(out, "replayed: reserved 1 place in "+daemon.DemoWorkshop) {
				t.Errorf("reservectl reserve --retry after the change: exit %d\n%s%s", code, out, errOut)
			}
			h.wantPlaces(1)
			h.stopAndCheck()
		})
	}
}

// TestSocketActorSurvivesRename: a uid's actor stays after its account is
// renamed (ghost, then ghost2), so its retries replay.
func TestSocketActorSurvivesRename(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	testActorSurvives(t, func(h *identityHarness) { h.usePasswd("ghost2") })
}

// TestSocketActorSurvivesRemoval: a uid's actor stays after its account is
// removed from the user database, so its retries replay.
func TestSocketActorSurvivesRemoval(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	testActorSurvives(t, func(h *identityHarness) { h.usePasswd("") })
}

// TestSocketIdentityUnavailable: while every lookup of a user fails, a uid
// seen for the first time gets 503 identity_unavailable with Retry-After,
// and nothing is stored; reservectl exits 75 and keeps its intent open.
// Once the user database answers again, the raw retry with the same key is
// decided (and its next retry replayed), and reservectl reserve --retry
// settles the intent: one reservation in each workshop.
func TestSocketIdentityUnavailable(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	for _, b := range builds() {
		t.Run(b.name, func(t *testing.T) {
			h := newIdentityHarness(t, b.bin)
			h.failLookups()
			key := uuid.NewString()
			a := h.request("POST", api.PathReservations, key, apiReservation)
			if a.Status != 503 || !strings.Contains(a.Body, `"code":"`+engine.CodeIdentityUnavailable+`"`) || a.RetryAfter != "1" {
				t.Fatalf("reservation while lookups fail = %+v, want 503 %s with Retry-After", a, engine.CodeIdentityUnavailable)
			}
			if code, out, errOut := h.reservectl("reserve", "--workshop", daemon.DemoWorkshop, "--quantity", "1"); code != cli.ExitUnknown || !strings.Contains(errOut, engine.CodeIdentityUnavailable) {
				t.Fatalf("reservectl reserve while lookups fail: exit %d, want %d\n%s%s", code, cli.ExitUnknown, out, errOut)
			}
			if code, out, errOut := h.reservectl("status"); code != cli.ExitUnknown {
				t.Errorf("reservectl status while lookups fail: exit %d, want %d (open)\n%s%s", code, cli.ExitUnknown, out, errOut)
			}
			h.wantPlaces(0)

			h.usePasswd("ghost")
			if b := h.request("POST", api.PathReservations, key, apiReservation); b.Status != 201 || b.Replayed != "false" {
				t.Errorf("retry once lookups work = %+v, want 201 decided now", b)
			}
			if c := h.request("POST", api.PathReservations, key, apiReservation); c.Status != 201 || c.Replayed != "true" {
				t.Errorf("second retry = %+v, want it replayed", c)
			}
			if code, out, errOut := h.reservectl("reserve", "--retry"); code != 0 || !strings.HasPrefix(out, "reserved 1 place in "+daemon.DemoWorkshop) {
				t.Errorf("reservectl reserve --retry once lookups work: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, errOut := h.reservectl("status"); code != 0 {
				t.Errorf("reservectl status after the retry: exit %d\n%s%s", code, out, errOut)
			}
			if who := h.whoami(); who != "unix-ghost" {
				t.Errorf("whoami = %s, want unix-ghost", who)
			}
			h.wantPlaces(1)
			h.stopAndCheck()
		})
	}
}
