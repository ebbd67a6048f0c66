package dist_test

import (
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// packageVersion is the version the test builds the package as.
const packageVersion = "1.2.3~test"

// installed are paths the package must install, each with its mode as
// dpkg-deb -c lists it.
var installed = map[string]string{
	"/usr/bin/reserved":                                    "-rwxr-xr-x",
	"/usr/bin/reservectl":                                  "-rwxr-xr-x",
	"/lib/systemd/system/reserved.service":                 "-rw-r--r--",
	"/lib/systemd/system/reserved.socket":                  "-rw-r--r--",
	"/lib/systemd/system/reserved-tcp.socket":              "-rw-r--r--",
	"/usr/share/man/man1/reserved.1.gz":                    "-rw-r--r--",
	"/usr/share/man/man1/reserved-serve.1.gz":              "-rw-r--r--",
	"/usr/share/man/man1/reservectl.1.gz":                  "-rw-r--r--",
	"/usr/share/man/man1/reservectl-reserve.1.gz":          "-rw-r--r--",
	"/usr/share/bash-completion/completions/reserved":      "-rw-r--r--",
	"/usr/share/bash-completion/completions/reservectl":    "-rw-r--r--",
	"/usr/share/zsh/vendor-completions/_reserved":          "-rw-r--r--",
	"/usr/share/zsh/vendor-completions/_reservectl":        "-rw-r--r--",
	"/usr/share/fish/vendor_completions.d/reserved.fish":   "-rw-r--r--",
	"/usr/share/fish/vendor_completions.d/reservectl.fish": "-rw-r--r--",
	"/usr/share/doc/reserve/copyright":                     "-rw-r--r--",
	"/usr/share/doc/reserve/changelog.gz":                  "-rw-r--r--",
	"/usr/share/lintian/overrides/reserve":                 "-rw-r--r--",
	envFile:                                                "-rw-------",
}

// envFile is the environment file of reserved.service, a conffile: dpkg -r
// keeps it, dpkg -P removes it.
const envFile = "/etc/default/reserved"

const stateDir = "/var/lib/reserved"

// TestDebianPackage builds the package with scripts/package.sh, checks its
// contents, installs it, runs both binaries, and removes and purges it:
// removing keeps the system user, purging removes it unless a database is
// left in its state directory, which purging keeps; a group that was there
// before stays, and a person's login named reserved makes dpkg refuse the
// installation before anything is unpacked. It changes this machine, so
// it refuses to run where the package or the user is there already, and
// undoes what it did even when it fails.
func TestDebianPackage(t *testing.T) {
	need(t, os.Getuid() == 0, "root (it installs a Debian package)")
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "git", "useradd"} {
		need(t, haveTool(tool), tool)
	}
	if packageKnown() {
		t.Fatal("the package reserve is installed on this machine; this test installs and purges it, so remove it first: dpkg -P reserve")
	}
	if userExists(t) {
		t.Fatal("a user reserved exists on this machine; this test creates and removes it, so remove it first: userdel reserved")
	}
	if _, err := os.Lstat(stateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists on this machine (%v); this test creates and removes it, so remove it first", stateDir, err)
	}
	t.Cleanup(func() {
		if packageKnown() {
			if out, err := exec.Command("dpkg", "-P", "reserve").CombinedOutput(); err != nil {
				t.Errorf("clean up: dpkg -P reserve: %v\n%s", err, out)
				// A maintainer script that fails must not leave the
				// package behind: purge it without them.
				for _, script := range []string{"prerm", "postrm"} {
					os.Remove("/var/lib/dpkg/info/reserve." + script)
				}
				if out, err := exec.Command("dpkg", "-P", "reserve").CombinedOutput(); err != nil {
					t.Errorf("clean up: dpkg -P reserve without its maintainer scripts: %v\n%s", err, out)
				}
			}
		}
		for _, dir := range []string{stateDir, accountsState} {
			if err := os.RemoveAll(dir); err != nil {
				t.Errorf("clean up: %v", err)
			}
		}
		if userExists(t) {
			if out, err := exec.Command("userdel", "reserved").CombinedOutput(); err != nil {
				t.Errorf("clean up: userdel reserved: %v\n%s", err, out)
			}
		}
		if _, err := user.LookupGroup("reserved"); err == nil {
			if out, err := exec.Command("groupdel", "reserved").CombinedOutput(); err != nil {
				t.Errorf("clean up: groupdel reserved: %v\n%s", err, out)
			}
		}
	})

	arch := strings.TrimSpace(run(t, "", nil, "dpkg", "--print-architecture"))
	deb := buildDeb(t)
	if want := "reserve_" + packageVersion + "_" + arch + ".deb"; filepath.Base(deb) != want {
		t.Fatalf("scripts/package.sh wrote %q, want %q", deb, want)
	}
	checkContents(t, run(t, "", nil, "dpkg-deb", "-c", deb))

	run(t, "", nil, "dpkg", "-i", deb)
	if help := run(t, "", nil, "/usr/bin/reserved", "--help"); !strings.Contains(help, "reserved serve") {
		t.Errorf("reserved --help does not show its usage:\n%s", help)
	}
	for _, cmd := range []string{"reserved", "reservectl"} {
		v := run(t, "", nil, "/usr/bin/"+cmd, "version")
		if !strings.HasPrefix(v, cmd+" "+packageVersion+" (") {
			t.Errorf("%s version says %q, want the package's version %s", cmd, v, packageVersion)
		}
	}
	if page := readGzip(t, "/usr/share/man/man1/reserved-serve.1.gz"); !strings.Contains(page, `.TH "RESERVED-SERVE" "1"`) || !strings.Contains(page, "committer-nice") {
		t.Errorf("reserved-serve.1 is not the man page of reserved serve:\n%.300s", page)
	}
	u, err := user.Lookup("reserved")
	if err != nil {
		t.Fatalf("the package did not create the user reserved: %v", err)
	}
	if u.HomeDir != stateDir {
		t.Errorf("the user reserved has the home %s, want %s", u.HomeDir, stateDir)
	}
	if shell := passwdShell(t); shell != "/usr/sbin/nologin" {
		t.Errorf("the user reserved has the shell %s, want /usr/sbin/nologin", shell)
	}
	if _, err := os.Lstat(stateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("installing created %s (%v); systemd creates it for the service", stateDir, err)
	}

	// Removing takes the files away and keeps the user, which may still
	// own a database.
	run(t, "", nil, "dpkg", "-r", "reserve")
	for path := range installed {
		if _, err := os.Lstat(path); path != envFile && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after dpkg -r, %s is still there (%v)", path, err)
		}
	}
	if _, err := os.Stat(envFile); err != nil {
		t.Errorf("dpkg -r removed the conffile %s: %v", envFile, err)
	}
	if !userExists(t) {
		t.Error("dpkg -r removed the user reserved; only purging does")
	}
	// Purging without a database removes the user and its group.
	run(t, "", nil, "dpkg", "-P", "reserve")
	if packageKnown() {
		t.Error("after dpkg -P, dpkg still knows the package reserve")
	}
	if userExists(t) {
		t.Error("dpkg -P left the user reserved")
	}
	if _, err := user.LookupGroup("reserved"); err == nil {
		t.Error("dpkg -P left the group reserved")
	}
	for _, path := range []string{accountsState, envFile} {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("dpkg -P left %s (%v)", path, err)
		}
	}

	// Purging keeps a database, and the user that owns it.
	run(t, "", nil, "dpkg", "-i", deb)
	if err := os.Mkdir(stateDir, 0o750); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(stateDir, "reserved.db")
	if err := os.WriteFile(db, []byte("reservations"), 0o600); err != nil {
		t.Fatal(err)
	}
	if purge := run(t, "", nil, "dpkg", "-P", "reserve"); !strings.Contains(purge, "keeping /var/lib/reserved") {
		t.Errorf("dpkg -P with a database does not say it keeps it:\n%s", purge)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("dpkg -P removed the database: %v", err)
	}
	if !userExists(t) {
		t.Error("dpkg -P removed the user reserved, though it owns a database that was kept")
	}

	// A group reserved that exists before the user becomes its primary
	// group.
	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, "userdel", "reserved")
	if _, err := user.LookupGroup("reserved"); err == nil {
		run(t, "", nil, "groupdel", "reserved")
	}
	run(t, "", nil, "groupadd", "--system", "reserved")
	g, err := user.LookupGroup("reserved")
	if err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, "dpkg", "-i", deb)
	if u, err := user.Lookup("reserved"); err != nil {
		t.Errorf("with a group reserved there before, the package did not create the user reserved: %v", err)
	} else if u.Gid != g.Gid {
		t.Errorf("the user reserved has the primary group %s, want the group reserved that was there before (%s)", u.Gid, g.Gid)
	}
	run(t, "", nil, "dpkg", "-P", "reserve")
	if userExists(t) {
		t.Error("dpkg -P left the user reserved it created")
	}
	if after, err := user.LookupGroup("reserved"); err != nil || after.Gid != g.Gid {
		t.Errorf("dpkg -P removed or changed the group reserved that was there before it: %v, %v", after, err)
	}
	if _, err := user.LookupGroup("reserved"); err == nil {
		run(t, "", nil, "groupdel", "reserved")
	}

	// A person's login named reserved is never adopted: dpkg refuses the
	// package before unpacking it, and the user stays as it was.
	const home = "/home/reserved"
	if _, err := os.Lstat(home); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists on this machine (%v); this test creates and removes it, so remove it first", home, err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	run(t, "", nil, "useradd", "--create-home", "--home-dir", home, "--shell", "/bin/bash", "reserved")
	before := run(t, "", nil, "getent", "passwd", "reserved")
	cmd := exec.Command("dpkg", "-i", deb)
	refusal, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(refusal), `reserve: refusing to install: a user "reserved" exists`) {
		t.Errorf("dpkg -i with a login named reserved: %v\n%s\nwant it refused", err, refusal)
	}
	if packageInstalled() {
		t.Error("dpkg installed the package though preinst refused it")
	}
	if after := run(t, "", nil, "getent", "passwd", "reserved"); after != before {
		t.Errorf("the refused installation changed the user: %q, was %q", after, before)
	}
	for path := range installed {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused installation left %s (%v)", path, err)
		}
	}
	if packageKnown() {
		run(t, "", nil, "dpkg", "-P", "reserve")
	}
	if !userExists(t) {
		t.Fatal("the user reserved, a person's login, is gone")
	}
	run(t, "", nil, "userdel", "--remove", "reserved")
}

// packageInstalled reports whether dpkg has the package reserve unpacked
// or installed, as opposed to not installed or only its configuration.
func packageInstalled() bool {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "reserve").Output()
	if err != nil {
		return false
	}
	status := strings.TrimSpace(string(out))
	return status != "not-installed" && status != "config-files"
}

// checkContents checks a dpkg-deb -c listing: every file in installed with
// its mode, everything owned by root.
func checkContents(t *testing.T, listing string) {
	t.Helper()
	modes := map[string]string{}
	for line := range strings.Lines(listing) {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c line %q has no path", line)
		}
		path := strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
		modes[path] = f[0]
		if f[1] != "root/root" {
			t.Errorf("%s is owned by %s, want root/root", path, f[1])
		}
	}
	for path, mode := range installed {
		switch got, ok := modes[path]; {
		case !ok:
			t.Errorf("the package has no %s", path)
		case got != mode:
			t.Errorf("%s has the mode %s, want %s", path, got, mode)
		}
	}
}

// packageKnown reports whether dpkg knows the package reserve in any state
// (installed, or removed with its configuration left).
func packageKnown() bool {
	return exec.Command("dpkg-query", "-W", "reserve").Run() == nil
}

func userExists(t *testing.T) bool {
	t.Helper()
	_, err := user.Lookup("reserved")
	var unknown user.UnknownUserError
	if err != nil && !errors.As(err, &unknown) {
		t.Fatalf("look up the user reserved: %v", err)
	}
	return err == nil
}

// passwdShell returns the login shell of the user reserved.
func passwdShell(t *testing.T) string {
	t.Helper()
	entry := strings.TrimSpace(run(t, "", nil, "getent", "passwd", "reserved"))
	f := strings.Split(entry, ":")
	return f[len(f)-1]
}

func readGzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	text, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(text)
}
