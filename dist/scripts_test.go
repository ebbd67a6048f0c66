package dist_test

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The package built once for every test that needs it.
var (
	debOnce sync.Once
	debPath string
	debErr  error
	debDir  string
)

// buildDeb builds the package with scripts/package.sh, once per test
// binary, and returns its path.
func buildDeb(t *testing.T) string {
	t.Helper()
	need(t, haveTool("dpkg-deb") && haveTool("dpkg") && haveTool("git"), "dpkg, dpkg-deb and git (to build the Debian package)")
	debOnce.Do(func() {
		if debDir, debErr = os.MkdirTemp("", "reserve-deb"); debErr != nil {
			return
		}
		cmd := exec.Command("scripts/package.sh", packageVersion)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "PACKAGE_OUT="+debDir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			debErr = errors.New("scripts/package.sh: " + err.Error() + "\n" + string(out))
			return
		}
		debPath = strings.TrimSpace(string(out))
	})
	if debErr != nil {
		t.Fatal(debErr)
	}
	return debPath
}

// TestMain removes the package the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if debDir != "" {
		os.RemoveAll(debDir)
	}
	os.Exit(code)
}

// maintainerScripts returns a directory with the maintainer scripts of the
// built package, as dpkg runs them.
func maintainerScripts(t *testing.T) string {
	t.Helper()
	deb := buildDeb(t)
	dir := t.TempDir()
	run(t, "", nil, "dpkg-deb", "--control", deb, dir)
	return dir
}

// needAccountTools skips (or under RESERVE_CI fails) a test that runs the
// account tools, which need root even on another root.
func needAccountTools(t *testing.T) {
	t.Helper()
	need(t, os.Getuid() == 0, "root (useradd and userdel need it, even with --prefix)")
	for _, tool := range []string{"useradd", "userdel", "usermod", "groupadd", "groupdel"} {
		need(t, haveTool(tool), tool)
	}
}

// accountFiles are the files of a system that hold its users and groups.
var accountFiles = []string{"passwd", "group", "shadow", "gshadow"}

// fakeRoot makes a system for DPKG_ROOT: this machine's account files and
// login.defs, without a user or group reserved, plus the entries given
// (passwd and group lines; shadow lines are made for them).
func fakeRoot(t *testing.T, passwd, group string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{"passwd": passwd, "group": group}
	if passwd != "" {
		extra["shadow"] = "reserved:!:20000::::::\n"
	}
	if group != "" {
		extra["gshadow"] = "reserved:!::\n"
	}
	for _, name := range append(accountFiles, "login.defs") {
		copyAccounts(t, name, filepath.Join(root, "etc", name), extra[name])
	}
	return root
}

// copyAccounts writes to path this machine's /etc/name without its lines
// for reserved, followed by extra.
func copyAccounts(t *testing.T, name, path, extra string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/etc", name))
	if err != nil {
		t.Fatal(err)
	}
	var kept strings.Builder
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, "reserved:") {
			kept.WriteString(line)
		}
	}
	kept.WriteString(extra)
	if err := os.WriteFile(path, []byte(kept.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runScript runs a maintainer script of dir with args on root, in the
// environment dpkg gives it, and returns its output and whether it
// succeeded.
func runScript(t *testing.T, dir, root, script string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, script), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DPKG_ROOT=" + root,
		"DPKG_MAINTSCRIPT_PACKAGE=reserve", "DPKG_MAINTSCRIPT_NAME=" + script}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", script, err)
	}
	return string(out), err == nil
}

// mustRun runs a maintainer script that must succeed.
func mustRun(t *testing.T, dir, root, script string, args ...string) {
	t.Helper()
	if out, ok := runScript(t, dir, root, script, args...); !ok {
		t.Fatalf("%s %s failed:\n%s", script, strings.Join(args, " "), out)
	}
}

// snapshot is the content of every file under root, by path.
func snapshot(t *testing.T, root string) map[string][sha256.Size]byte {
	t.Helper()
	files := map[string][sha256.Size]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files[strings.TrimPrefix(path, root)] = sha256.Sum256(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(a, b map[string][sha256.Size]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// entryOf returns the line for reserved in root's etc/name, "" for none.
func entryOf(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "etc", name))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, "reserved:") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// accountsState is where postinst records what it created.
const accountsState = "/var/lib/reserve"

// TestScriptsRefuseAccountsTheyMayNotAdopt: a user reserved that is a
// person's login, or has a login shell, or a uid outside the system range,
// makes preinst refuse the installation (and postinst the configuration)
// with a message that says why, and nothing on the system changes.
func TestScriptsRefuseAccountsTheyMayNotAdopt(t *testing.T) {
	needAccountTools(t)
	dir := maintainerScripts(t)
	for _, tc := range []struct{ name, passwd, uid, shell string }{
		{"login", "reserved:x:1001:1001:Reserved Person:/home/reserved:/bin/bash\n", "1001", "/bin/bash"},
		{"system uid with a shell", "reserved:x:998:998::/var/lib/reserved:/bin/sh\n", "998", "/bin/sh"},
		{"people's uid without a shell", "reserved:x:1001:1001::/home/reserved:/usr/sbin/nologin\n", "1001", "/usr/sbin/nologin"},
		{"root's uid", "reserved:x:0:0::/root:/usr/sbin/nologin\n", "0", "/usr/sbin/nologin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeRoot(t, tc.passwd, "reserved:x:"+tc.uid+":\n")
			before := snapshot(t, root)
			want := `reserve: refusing to install: a user "reserved" exists (uid ` + tc.uid + `, shell ` + tc.shell + `) that is not a system account without a login shell (uid 1 to 999, shell nologin or false)`
			for _, step := range [][]string{{"preinst", "install"}, {"postinst", "configure", ""}} {
				out, ok := runScript(t, dir, root, step[0], step[1:]...)
				if ok || !strings.HasPrefix(out, want) {
					t.Errorf("%s with that user: ok %v, %q; want a failure saying %q", step[0], ok, out, want)
				}
				if !sameFiles(before, snapshot(t, root)) {
					t.Fatalf("%s changed the system it refused", step[0])
				}
			}
		})
	}
}

// TestScriptsAdoptASystemAccountAndKeepItOnPurge: a system account
// reserved without a login shell is adopted as it is and survives a purge;
// a group reserved that was missing is made for the service, and only it
// goes with the purge.
func TestScriptsAdoptASystemAccountAndKeepItOnPurge(t *testing.T) {
	needAccountTools(t)
	dir := maintainerScripts(t)
	for _, tc := range []struct{ name, passwd, group string }{
		{"with its group", "reserved:x:998:998:the admin's own:/var/lib/reserved:/usr/sbin/nologin\n", "reserved:x:998:\n"},
		{"without a group", "reserved:x:997:65534::/nonexistent:/bin/false\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeRoot(t, tc.passwd, tc.group)
			user := entryOf(t, root, "passwd")
			mustRun(t, dir, root, "preinst", "install")
			mustRun(t, dir, root, "postinst", "configure", "")
			if got := entryOf(t, root, "passwd"); got != user {
				t.Errorf("postinst changed the adopted user: %q, was %q", got, user)
			}
			group := entryOf(t, root, "group")
			if group == "" {
				t.Fatal("postinst left the service without its group reserved")
			}
			if tc.group != "" && group != strings.TrimSpace(tc.group) {
				t.Errorf("postinst changed the adopted group: %q, was %q", group, tc.group)
			}
			mustRun(t, dir, root, "postrm", "remove")
			mustRun(t, dir, root, "postrm", "purge")
			if got := entryOf(t, root, "passwd"); got != user {
				t.Errorf("purge removed or changed the adopted user: %q, was %q", got, user)
			}
			switch got := entryOf(t, root, "group"); {
			case tc.group != "" && got != group:
				t.Errorf("purge removed or changed the adopted group: %q, was %q", got, group)
			case tc.group == "" && got != "":
				t.Errorf("purge left the group it made: %q", got)
			}
			mustBeGone(t, filepath.Join(root, accountsState))
		})
	}
}

// TestScriptsCreateAndPurgeTheirAccounts: without an account postinst
// makes a system user and group reserved, and purge removes them, leaving
// the account files as they were; a group reserved that was there before
// becomes the user's group and stays after the purge.
func TestScriptsCreateAndPurgeTheirAccounts(t *testing.T) {
	needAccountTools(t)
	dir := maintainerScripts(t)
	for _, tc := range []struct{ name, group string }{
		{"no account", ""},
		{"a group before", "reserved:x:990:alice\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeRoot(t, "", tc.group)
			before := map[string]string{}
			for _, name := range accountFiles {
				before[name] = entryOf(t, root, name)
			}
			mustRun(t, dir, root, "preinst", "install")
			mustRun(t, dir, root, "postinst", "configure", "")
			f := strings.Split(entryOf(t, root, "passwd"), ":")
			if len(f) != 7 {
				t.Fatalf("postinst made no user reserved: %q", f)
			}
			uid, _ := strconv.Atoi(f[2])
			if uid < 1 || uid > 999 || f[5] != "/var/lib/reserved" || f[6] != "/usr/sbin/nologin" {
				t.Errorf("postinst made the user %q, want a system account at /var/lib/reserved without a login shell", f)
			}
			g := strings.Split(entryOf(t, root, "group"), ":")
			if len(g) != 4 || g[2] != f[3] {
				t.Errorf("the user's group is %s, want the group reserved (%q)", f[3], g)
			}
			mustRun(t, dir, root, "postrm", "remove")
			if entryOf(t, root, "passwd") == "" {
				t.Fatal("removing the package removed the user; only purging does")
			}
			mustRun(t, dir, root, "postrm", "purge")
			for _, name := range accountFiles {
				if got := entryOf(t, root, name); got != before[name] {
					t.Errorf("after the purge etc/%s has %q for reserved, want %q as before the installation", name, got, before[name])
				}
			}
			mustBeGone(t, filepath.Join(root, accountsState))
		})
	}
}

// TestScriptsOwnTheUserOfAnEarlierVersion: an upgrade from a version that
// kept no record takes the user it made ("reserve daemon") as the
// package's, so that a purge removes it; the group, which may have been
// there before that version, stays.
func TestScriptsOwnTheUserOfAnEarlierVersion(t *testing.T) {
	needAccountTools(t)
	dir := maintainerScripts(t)
	root := fakeRoot(t, "reserved:x:996:996:reserve daemon:/var/lib/reserved:/usr/sbin/nologin\n", "reserved:x:996:\n")
	group := entryOf(t, root, "group")
	mustRun(t, dir, root, "preinst", "upgrade", "1.0.0")
	mustRun(t, dir, root, "postinst", "configure", "1.0.0")
	mustRun(t, dir, root, "postrm", "purge")
	if got := entryOf(t, root, "passwd"); got != "" {
		t.Errorf("purge left the user an earlier version made: %q", got)
	}
	if got := entryOf(t, root, "group"); got != group {
		t.Errorf("purge removed or changed the group: %q, was %q", got, group)
	}
}

// TestScriptsKeepADatabaseAndItsOwner: a purge that finds a database in
// /var/lib/reserved keeps it and the accounts, and says how to remove them.
func TestScriptsKeepADatabaseAndItsOwner(t *testing.T) {
	needAccountTools(t)
	dir := maintainerScripts(t)
	root := fakeRoot(t, "", "")
	mustRun(t, dir, root, "postinst", "configure", "")
	db := filepath.Join(root, stateDir, "reserved.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, []byte("reservations"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, ok := runScript(t, dir, root, "postrm", "purge")
	const want = "reserve: keeping /var/lib/reserved (the database) and the user and group reserved; remove them yourself: rm -r /var/lib/reserved; userdel reserved; groupdel reserved\n"
	if !ok || out != want {
		t.Errorf("purge with a database: ok %v, %q; want %q", ok, out, want)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("purge removed the database: %v", err)
	}
	if entryOf(t, root, "passwd") == "" || entryOf(t, root, "group") == "" {
		t.Error("purge removed the accounts that own a database it kept")
	}
}

func mustBeGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there (%v)", path, err)
	}
}

// TestScriptsKeepEnabledUnitsAndForgetThemOnPurge: through
// deb-systemd-helper, installing enables no unit, an upgrade keeps the
// units the administrator enabled, and purging removes their symlinks and
// the state deb-systemd-helper kept, leaving nothing of the units behind.
func TestScriptsKeepEnabledUnitsAndForgetThemOnPurge(t *testing.T) {
	needAccountTools(t)
	need(t, haveTool("deb-systemd-helper") && haveTool("systemctl"), "deb-systemd-helper and systemctl (Debian packages init-system-helpers and systemd)")
	dir := maintainerScripts(t)
	root := fakeRoot(t, "", "")
	unitDir := filepath.Join(root, "lib/systemd/system")
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, unit := range units {
		text, err := os.ReadFile(filepath.Join("systemd", unit))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(unitDir, unit), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := func() []string {
		var found []string
		filepath.WalkDir(filepath.Join(root, "etc/systemd"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Type()&fs.ModeSymlink != 0 {
				found = append(found, strings.TrimPrefix(path, root))
			}
			return nil
		})
		return found
	}
	state := filepath.Join(root, "var/lib/systemd/deb-systemd-helper-enabled")

	mustRun(t, dir, root, "preinst", "install")
	mustRun(t, dir, root, "postinst", "configure", "")
	if l := links(); len(l) != 0 {
		t.Fatalf("installing enabled units: %q", l)
	}
	run(t, "", nil, "systemctl", "--root="+root, "enable", "reserved.socket", "reserved-tcp.socket")
	enabled := links()
	if len(enabled) != 2 {
		t.Fatalf("systemctl enable made the symlinks %q, want two", enabled)
	}
	mustRun(t, dir, root, "preinst", "upgrade", "1.0.0")
	mustRun(t, dir, root, "postinst", "configure", "1.0.0")
	if l := links(); !slices.Equal(l, enabled) {
		t.Errorf("after an upgrade the units' symlinks are %q, want %q as the administrator made them", l, enabled)
	}
	mustRun(t, dir, root, "prerm", "remove")
	mustRun(t, dir, root, "postrm", "remove")
	if err := os.RemoveAll(unitDir); err != nil { // dpkg removes the files between the two.
		t.Fatal(err)
	}
	mustRun(t, dir, root, "postrm", "purge")
	if l := links(); len(l) != 0 {
		t.Errorf("purge left the symlinks %q", l)
	}
	if entries, err := os.ReadDir(state); err == nil && len(entries) > 0 {
		t.Errorf("purge left deb-systemd-helper's state of the units: %v", entries)
	}
}
