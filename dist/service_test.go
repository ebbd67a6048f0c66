package dist_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
)

// systemdBinary is the service manager the test runs.
const systemdBinary = "/lib/systemd/systemd"

// testUID is the uid and gid of the user and group reserved in the test's
// system; nothing on this machine needs to have it free, since only the
// test's own mount namespace sees that user.
const testUID = 64990

// systemdWait bounds every wait for the service manager or the daemon.
const systemdWait = 60 * time.Second

// manager is a systemd that runs as PID 1 of namespaces of its own (PID,
// mount, UTS, IPC, network and cgroup), with the units of dist/systemd and
// nothing else: SYSTEMD_UNIT_PATH replaces every unit directory of this
// machine with one of the test's, and empty directories hide them, so that
// none of this machine's units can start (its sysinit.target would run
// systemd-tmpfiles, which empties this machine's /tmp, and
// systemd-sysctl). Its
// /run, /var/lib, /tmp, /var/tmp and /etc/default are the test's, and its
// /etc/passwd and /etc/group are copies with the user and group reserved.
type manager struct {
	dir  string // The test's directory: run/ is the manager's /run, lib/ its /var/lib.
	cmd  *exec.Cmd
	pid  int // PID 1 of the namespaces, as this machine numbers it.
	done chan struct{}
}

// TestServiceRunsUnderSystemd runs reserved.service, with all its
// hardening, under a real systemd, socket activated by reserved.socket and
// reserved-tcp.socket as the package installs them (only ExecStart names a
// freshly built reserved, and a drop-in sends its log to a file and pings
// the watchdog every 2s). The first connection starts it; it is ready
// (Type=notify) with both listeners, identifies root on the socket as an
// admin, takes its environment from /etc/default/reserved, answers its
// probes, takes no lock file beside systemd's socket,
// serves a token on TCP, stores a reservation in its state
// directory with its own user's permissions, pings the watchdog, runs
// without capabilities under the system call filter, and asks for its
// committer's priority without the filter refusing it; killed, it is
// restarted and answers the same reservation from its database; stopped,
// it exits 0 and leaves the socket to systemd.
func TestServiceRunsUnderSystemd(t *testing.T) {
	m := startManager(t)
	ctx := context.Background()

	if out := m.systemctl(t, "is-active", "reserved.service"); out != "inactive" {
		t.Fatalf("reserved.service is %q before any connection, want inactive", out)
	}
	m.systemctl(t, "start", "reserved.socket", "reserved-tcp.socket")
	socket := filepath.Join(m.dir, "run/reserved/reserved.sock")
	local := &client.Client{Socket: socket}
	who, err := local.WhoAmI(ctx)
	if err != nil {
		t.Fatalf("whoami on the socket: %v\n%s", err, m.logs())
	}
	if who.Actor != "unix-root" || !who.Admin {
		t.Errorf("whoami as root on the socket = %+v, want unix-root, an admin", who)
	}
	// READY=1 is sent once both listeners serve, so a first answer may
	// come before systemd has read it; the state must follow soon.
	m.eventually(t, "reserved.service active (READY=1) after it answered", func() bool {
		return m.systemctl(t, "show", "-P", "ActiveState", "reserved.service") == "active"
	})
	for _, probe := range []string{api.PathLive, api.PathReady, api.PathMetrics} {
		if resp, body, err := local.Do(ctx, http.MethodGet, probe, nil, nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s on the socket: %v %s", probe, err, body)
		} else if probe == api.PathMetrics && !bytes.Contains(body, []byte("\nprocess_start_time_seconds ")) {
			// The process collector reads /proc/self and the boot time
			// in /proc/stat, which ProcSubset=pid hides.
			t.Errorf("GET %s has no process_start_time_seconds:\n%s", probe, body)
		}
	}
	// The socket is systemd's: the daemon takes no lock beside it.
	if _, err := os.Lstat(socket + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the daemon made %s.lock beside systemd's socket (%v)", socket, err)
	}
	pid := m.mainPID(t)
	status := m.inside(t, "cat", fmt.Sprintf("/proc/%d/status", pid))
	for _, want := range []string{
		fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d", testUID, testUID, testUID, testUID),
		"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000",
		"NoNewPrivs:\t1", "Seccomp:\t2",
	} {
		if !strings.Contains(status, want+"\n") {
			t.Errorf("the daemon's /proc/%d/status has no line %q:\n%s", pid, want, status)
		}
	}
	m.checkCommitterNice(t, pid)
	if !strings.Contains(m.logs(), " gc_percent=150 ") {
		t.Errorf("the daemon did not take GOGC=150 from /etc/default/reserved (EnvironmentFile=):\n%s", m.logs())
	}

	// TCP, from inside the manager's network namespace.
	token, err := local.CreateToken(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	remote := &client.Client{BaseURL: "http://127.0.0.1:8080", Token: token, HTTPClient: m.httpClient()}
	key := engine.OperationKey(uuid.NewString())
	req := engine.Request{Workshop: "workshop-demo", Quantity: 1}
	code, first, _, err := remote.Reserve(ctx, key, req)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("a reservation over TCP: %d %s %v\n%s", code, first, err, m.logs())
	}
	db := filepath.Join(m.dir, "lib/reserved/reserved.db")
	if fi, err := os.Stat(db); err != nil {
		t.Errorf("no database in the state directory: %v", err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != testUID || fi.Mode().Perm() != 0o600 {
		t.Errorf("the database %s has the mode %v and uid %d, want 0600 and the user reserved (%d)", db, fi.Mode().Perm(), st.Uid, testUID)
	}

	// The watchdog: systemd records each ping.
	first0 := m.systemctl(t, "show", "-P", "WatchdogTimestampMonotonic", "reserved.service")
	m.eventually(t, "a watchdog ping", func() bool {
		return m.systemctl(t, "show", "-P", "WatchdogTimestampMonotonic", "reserved.service") != first0
	})

	// Killed, the daemon is restarted by Restart=on-failure, and the same
	// intent gets the stored answer.
	m.systemctl(t, "kill", "--signal=SIGKILL", "reserved.service")
	m.eventually(t, "the restart after SIGKILL", func() bool {
		return m.systemctl(t, "show", "-P", "NRestarts", "reserved.service") == "1" &&
			m.systemctl(t, "show", "-P", "ActiveState", "reserved.service") == "active"
	})
	code, again, replayed, err := remote.Reserve(ctx, key, req)
	if err != nil || code != http.StatusCreated || !replayed || !bytes.Equal(again, first) {
		t.Errorf("the same intent after the restart: %d %s replayed %v %v; want the stored answer %s", code, again, replayed, err, first)
	}

	// Stopped, it exits cleanly, and the socket stays with systemd.
	m.systemctl(t, "stop", "reserved.service")
	if out := m.systemctl(t, "show", "-P", "Result", "reserved.service"); out != "success" {
		t.Errorf("stopping reserved.service: result %q, want success\n%s", out, m.logs())
	}
	if fi, err := os.Lstat(socket); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		t.Errorf("after the daemon stopped the socket is gone: %v", err)
	}
	if strings.Contains(m.logs(), "level=ERROR") {
		t.Errorf("the daemon logged errors:\n%s", m.logs())
	}
}

// checkCommitterNice checks what became of the group committer's nice
// value of -10. With an RLIMIT_NICE that allows it (LimitNICE=-10) it must
// be in effect. A machine whose root lacks CAP_SYS_RESOURCE cannot raise
// that limit for the service, and the kernel then refuses the value with
// EACCES ("permission denied"); the system call filter, which would refuse
// it with EPERM ("operation not permitted"), must not.
func (m *manager) checkCommitterNice(t *testing.T, pid int) {
	t.Helper()
	limits := m.inside(t, "cat", fmt.Sprintf("/proc/%d/limits", pid))
	allowed := false
	for line := range strings.Lines(limits) {
		if f := strings.Fields(line); strings.HasPrefix(line, "Max nice priority") && len(f) > 3 {
			soft, _ := strconv.Atoi(f[3])
			allowed = soft >= 30 // RLIMIT_NICE is 20 - the lowest nice value.
		}
	}
	logs := m.logs()
	serving := ""
	for line := range strings.Lines(logs) {
		if strings.Contains(line, `msg="reserved is serving"`) {
			serving = line
		}
	}
	switch {
	case serving == "":
		t.Errorf("the daemon logged no start line:\n%s", logs)
	case strings.Contains(logs, "operation not permitted"):
		t.Errorf("the system call filter refused the committer's setpriority:\n%s", logs)
	case allowed && !strings.Contains(serving, "committer_nice=-10"):
		t.Errorf("with an RLIMIT_NICE of -10 the committer does not run at nice -10:\n%s", logs)
	case !allowed && !strings.Contains(logs, "permission denied"):
		t.Errorf("the daemon's RLIMIT_NICE does not allow -10, but the log does not say the kernel refused it:\n%s", logs)
	case !allowed:
		t.Logf("this machine cannot grant LimitNICE=-10 (its root lacks CAP_SYS_RESOURCE), so the committer keeps the daemon's priority; the system call filter let setpriority through:\n%s", limits)
	}
}

// startManager starts the service manager with the units of dist/systemd
// and a freshly built reserved, and stops it, and everything it started,
// when the test ends.
func startManager(t *testing.T) *manager {
	t.Helper()
	need(t, os.Getuid() == 0, "root (it runs systemd in namespaces of its own)")
	for _, tool := range []string{"unshare", "nsenter", "mount", "systemctl"} {
		need(t, haveTool(tool), tool+" (Debian packages util-linux, mount and systemd)")
	}
	_, err := os.Stat(systemdBinary)
	need(t, err == nil, systemdBinary+" (Debian package systemd)")
	cgroupRoot := cgroup2Mount(t)
	// /lib may be a link to /usr/lib, and /proc names the file itself.
	systemdFile, err := filepath.EvalSymlinks(systemdBinary)
	if err != nil {
		t.Fatal(err)
	}

	// A short directory: the socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "rsd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	m := &manager{dir: dir, done: make(chan struct{})}
	test := filepath.Join(dir, "run/reserve-test")
	for _, d := range []string{"lib", "run/reserve-test/units/reserved.service.d", "run/reserve-test/none"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The user reserved runs the daemon from here.
	for _, d := range []string{dir, filepath.Join(dir, "run"), test} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "..", []string{"CGO_ENABLED=0"}, "go", "build", "-o", filepath.Join(test, "reserved"), "./cmd/reserved")
	m.writeUnits(t)
	m.writeAccounts(t)
	// The manager's /etc/default holds the package's example environment
	// file with one setting made.
	example, err := os.ReadFile("debian/reserved.default")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "default/reserved"), append(example, "GOGC=150\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "console"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// The manager's cgroup is a new one below this process's, which it
	// sees as the root of the hierarchy (a cgroup namespace).
	own := "/"
	if data, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
				own = rest
			}
		}
	}
	cgroup := filepath.Join(cgroupRoot, own, filepath.Base(dir))
	if err := os.Mkdir(cgroup, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(t, cgroup) })

	// The mounts are made in the new mount namespace, before systemd
	// starts: binds first, since the tmpfs on /tmp hides the test's
	// directory. Besides SYSTEMD_UNIT_PATH, an empty directory hides each
	// of this machine's unit and generator directories, so that even a
	// systemd that ignored the variable would find none of its units.
	script := `set -eu
mount -t proc proc /proc
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount --bind "$D/run" /run
mount --bind "$D/lib" /var/lib
mount --bind "$D/passwd" /etc/passwd
mount --bind "$D/group" /etc/group
mount --bind "$D/console" /dev/console
mount --bind "$D/default" /etc/default
for d in /etc/systemd/system /etc/systemd/system.control /etc/systemd/system.attached \
	/usr/local/lib/systemd/system /lib/systemd/system /usr/lib/systemd/system \
	/etc/systemd/system-generators /usr/local/lib/systemd/system-generators \
	/lib/systemd/system-generators /usr/lib/systemd/system-generators; do
	if [ -d "$d" ]; then mount --bind "$D/run/reserve-test/none" "$d"; fi
done
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
exec env -i container=reserve-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	SYSTEMD_UNIT_PATH=/run/reserve-test/units \
	SYSTEMD_GENERATOR_PATH=/run/reserve-test/none \
	SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/reserve-test/none \
	` + systemdBinary + ` --unit=reserve-test.target --log-target=console --log-level=info --show-status=no
`
	wrapper := `set -eu
echo $$ >"$CGROUP/cgroup.procs"
exec unshare --pid --fork --mount --propagation private --uts --ipc --net --cgroup -- sh -c "$SCRIPT"
`
	m.cmd = exec.Command("sh", "-c", wrapper)
	m.cmd.Env = append(os.Environ(), "D="+dir, "CGROUP="+cgroup, "SCRIPT="+script)
	var out bytes.Buffer
	m.cmd.Stdout, m.cmd.Stderr = &out, &out
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.cmd.Wait(); close(m.done) }()
	t.Cleanup(m.stop)

	m.eventually(t, "systemd as PID 1 of its namespaces", func() bool {
		select {
		case <-m.done:
			t.Fatalf("the manager exited: %v\n%s\n%s", m.cmd.ProcessState, out.String(), m.console())
		default:
		}
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", m.cmd.Process.Pid, m.cmd.Process.Pid))
		if f := strings.Fields(string(children)); len(f) == 1 {
			m.pid, _ = strconv.Atoi(f[0])
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", m.pid))
			return exe == systemdFile
		}
		return false
	})
	m.eventually(t, "systemd running", func() bool {
		state, _ := m.try("systemctl", "is-system-running")
		return state == "running" || state == "degraded"
	})
	// The one safeguard that matters: this systemd knows no unit of this
	// machine's.
	if paths := m.systemctl(t, "show", "-P", "UnitPath"); paths != "/run/reserve-test/units" {
		m.stop()
		t.Fatalf("the test's systemd looks for units in %q, not only in its own directory; stopped it", paths)
	}
	return m
}

// writeUnits writes the units of dist/systemd, the targets they depend on
// (empty, with no dependencies of their own), and the test's drop-in.
func (m *manager) writeUnits(t *testing.T) {
	t.Helper()
	units := filepath.Join(m.dir, "run/reserve-test/units")
	writeUnits(t, units, "/run/reserve-test/reserved")
	for _, target := range []string{"reserve-test", "sysinit", "basic", "sockets", "shutdown", "multi-user"} {
		writeFile(t, filepath.Join(units, target+".target"), "[Unit]\nDefaultDependencies=no\n")
	}
	writeFile(t, filepath.Join(units, "reserved.service.d/test.conf"), `# No journald runs: the log goes to a file. The daemon pings the
# watchdog at half of WatchdogSec=, so every second here.
[Service]
StandardOutput=append:/run/reserve-test/reserved.log
StandardError=inherit
WatchdogSec=2s
`)
}

// writeAccounts writes the copies of /etc/passwd and /etc/group that the
// manager sees, with the user and group reserved as the package makes
// them.
func (m *manager) writeAccounts(t *testing.T) {
	t.Helper()
	for _, f := range []struct{ name, entry string }{
		{"passwd", fmt.Sprintf("reserved:x:%d:%d:reserve daemon:/var/lib/reserved:/usr/sbin/nologin\n", testUID, testUID)},
		{"group", fmt.Sprintf("reserved:x:%d:\n", testUID)},
	} {
		copyAccounts(t, f.name, filepath.Join(m.dir, f.name), f.entry)
	}
}

// stop kills the manager, and with it, as PID 1 of its PID namespace,
// every process it started.
func (m *manager) stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	if m.pid != 0 {
		syscall.Kill(m.pid, syscall.SIGKILL)
	}
	m.cmd.Process.Kill()
	select {
	case <-m.done:
	case <-time.After(systemdWait):
	}
}

// removeCgroup removes the manager's cgroup and those systemd made below
// it, once their processes are gone.
func removeCgroup(t *testing.T, cgroup string) {
	deadline := time.Now().Add(systemdWait)
	for {
		var dirs []string
		filepath.WalkDir(cgroup, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		var err error
		for i := len(dirs) - 1; i >= 0; i-- {
			if e := os.Remove(dirs[i]); e != nil && !errors.Is(e, fs.ErrNotExist) {
				err = e
			}
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("clean up: remove the cgroup %s: %v", cgroup, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroup2Mount returns where this machine mounts the cgroup v2 hierarchy.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		for i, field := range fields {
			if field == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" {
				return fields[4]
			}
		}
	}
	need(t, false, "a cgroup v2 hierarchy (systemd runs in a cgroup of its own)")
	return ""
}

// try runs a command in the manager's namespaces and returns its trimmed
// output.
func (m *manager) try(name string, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(m.pid), "-m", "-p", "-u", "-i", "-n", "-C", "--", name}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// inside runs a command in the manager's namespaces, which must succeed.
func (m *manager) inside(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := m.try(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// systemctl runs systemctl in the manager's namespaces. is-active and
// friends answer with a non-zero status; their output is what counts.
func (m *manager) systemctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := m.try("systemctl", args...)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil && args[0] != "is-active" {
		t.Fatalf("systemctl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, m.logs())
	}
	return out
}

func (m *manager) mainPID(t *testing.T) int {
	t.Helper()
	pid, err := strconv.Atoi(m.systemctl(t, "show", "-P", "MainPID", "reserved.service"))
	if err != nil || pid == 0 {
		t.Fatalf("reserved.service has no main process: %v", err)
	}
	return pid
}

// eventually polls cond until it holds, failing the test after
// systemdWait.
func (m *manager) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(systemdWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v\n%s\n%s", what, systemdWait, m.console(), m.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logs returns the daemon's log.
func (m *manager) logs() string {
	data, _ := os.ReadFile(filepath.Join(m.dir, "run/reserve-test/reserved.log"))
	return string(data)
}

// console returns what the manager logged.
func (m *manager) console() string {
	data, _ := os.ReadFile(filepath.Join(m.dir, "console"))
	return string(data)
}

// httpClient returns a client whose connections are made in the
// manager's network namespace, where reserved-tcp.socket listens.
func (m *manager) httpClient() *http.Client {
	ns := fmt.Sprintf("/proc/%d/ns/net", m.pid)
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			type result struct {
				c   net.Conn
				err error
			}
			ch := make(chan result, 1)
			go func() {
				// The thread enters the namespace and is never
				// unlocked, so it ends with this goroutine and no
				// other goroutine runs in that namespace.
				runtime.LockOSThread()
				f, err := os.Open(ns)
				if err != nil {
					ch <- result{nil, err}
					return
				}
				defer f.Close()
				if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
					ch <- result{nil, err}
					return
				}
				var d net.Dialer
				c, err := d.DialContext(ctx, network, addr)
				ch <- result{c, err}
			}()
			r := <-ch
			return r.c, r.err
		},
	}}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
