package daemon_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/server/servertest"
)

// reservedBin is the reserved binary built once for this test binary.
var reservedBin string

// reservedBinEnv hands the reserved binary built by a test binary to a
// copy of it that the test runs again (in a mount namespace of its own),
// which then builds none.
const reservedBinEnv = "RESERVE_TEST_RESERVED_BIN"

// TestMain builds reserved once for the tests. The tests that spend most
// of their time waiting (for a lease, a timeout, a build) call t.Parallel,
// so that they wait together once the others have run; the tests that
// measure how fast the daemon answers under load, or that the daemons
// leave a hung PostgreSQL soon (TestPostgresFailover), do not.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	// A test's peer run as another user (pathstest.RunAsNobody) only
	// talks to a daemon its parent started, and could not build one.
	if os.Getenv(peerEnv) != "" {
		os.Exit(m.Run())
	}
	if reservedBin = os.Getenv(reservedBinEnv); reservedBin != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "reserved-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reservedBin = filepath.Join(dir, "reserved")
	out, err := exec.Command("go", "build", "-o", reservedBin, "github.com/reserve/reserve/cmd/reserved").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build reserved: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startTimeout bounds how long a daemon may take to start or stop; it only
// ends a hung test clearly.
const startTimeout = 30 * time.Second

// proc is a running reserved process.
type proc struct {
	cmd    *exec.Cmd
	socket string
	url    string // TCP base URL, from the daemon's "reserved is serving" log line.
	logs   *servertest.LogBuffer
	done   chan struct{} // Closed when the process has exited.
	err    error         // The exit error, valid after done.
}

// env returns a minimal environment confined to dir, plus extra.
func env(dir string, extra ...string) []string {
	// No configuration file of the machine's is read.
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "RESERVED_CONFIG="}, extra...)
}

// launch starts reserved with args and env, without waiting for it.
func launch(t *testing.T, environ []string, args ...string) *proc {
	t.Helper()
	return launchProgram(t, environ, reservedBin, args...)
}

// launchProgram starts program, which runs reserved, like launch.
func launchProgram(t *testing.T, environ []string, program string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(program, args...)
	cmd.Env = environ
	return launchCmd(t, cmd)
}

// launchCmd starts cmd, which runs reserved, like launch.
func launchCmd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	args := cmd.Args[1:]
	p := &proc{cmd: cmd, logs: &servertest.LogBuffer{}, done: make(chan struct{})}
	p.cmd.Stderr = p.logs
	p.cmd.Stdout = p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("reserved %s output:\n%s", strings.Join(args, " "), p.logs)
		}
	})
	return p
}

// start runs `reserved serve` on dir's database, a socket in a short
// directory and a random loopback port, and waits until it serves.
func start(t *testing.T, dir, socket string, extra ...string) *proc {
	t.Helper()
	p := launch(t, env(dir), serveArgs(dir, socket, extra...)...)
	p.socket = socket
	p.waitServing(t)
	return p
}

// serveArgs are the arguments with which start runs reserved.
func serveArgs(dir, socket string, extra ...string) []string {
	return append([]string{"serve", "--db", filepath.Join(dir, "reserved.db"), "--socket", socket, "--listen", "127.0.0.1:0", "--log-format", "json"}, extra...)
}

// waitServing reads the log until the daemon says where it serves.
func (p *proc) waitServing(t *testing.T) {
	t.Helper()
	servertest.Eventually(t, startTimeout, "reserved serving", func() bool {
		select {
		case <-p.done:
			t.Fatalf("reserved exited before serving: %v\n%s", p.err, p.logs)
		default:
		}
		r := p.logs.Find("reserved is serving")
		if addr, _ := r["tcp"].(string); addr != "" {
			p.url = "http://" + addr
		}
		return r != nil
	})
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(startTimeout):
		t.Fatalf("reserved did not exit within %v:\n%s", startTimeout, p.logs)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// stop sends SIGTERM and returns the exit code.
func (p *proc) stop(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return p.wait(t)
}

func (p *proc) socketClient() *client.Client { return &client.Client{Socket: p.socket} }

func (p *proc) tcpClient(token string) *client.Client {
	return &client.Client{BaseURL: p.url, Token: token}
}

// mustNotExist fails unless path is gone.
func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists (%v)", path, err)
	}
}

// staleSocket leaves a socket file at path that nothing listens on.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}
