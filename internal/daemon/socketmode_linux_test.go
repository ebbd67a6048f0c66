//go:build linux

package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reserve/reserve/internal/server/servertest"
)

// TestSocketNeverWiderThanItsMode starts the daemon under umask 000, which
// would give a new socket file the permissions 0777, traced with ptrace,
// and looks at the socket file at every stop of every system call the
// daemon makes, while the calling thread is stopped: a file's permissions
// only change by a system call, so every state the socket file passes
// through is seen, the instant bind(2) creates it included. None may be
// wider than --socket-mode, or another user could connect in it.
func TestSocketNeverWiderThanItsMode(t *testing.T) {
	const mode = 0o600
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "m.sock")
	out, err := os.Create(filepath.Join(dir, "reserved.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	var seen, wider int
	var widest fs.FileMode
	look := func() {
		if fi, err := os.Lstat(socket); err == nil {
			seen++
			if perm := fi.Mode().Perm(); perm&^mode != 0 {
				wider++
				widest |= perm
			}
		}
	}
	args := append([]string{"-c", `umask 000 && exec "$0" "$@"`, reservedBin},
		serveArgs(dir, socket, "--listen", "", "--socket-mode", fmt.Sprintf("%#o", mode))...)
	tr := startTraced(t, env(dir), out, "/bin/sh", args, look)

	servertest.Eventually(t, startTimeout, "reserved serving", func() bool {
		select {
		case <-tr.done:
			log, _ := os.ReadFile(out.Name())
			t.Fatalf("reserved exited before serving (%v, %v):\n%s", tr.status, tr.err, log)
		default:
		}
		log, _ := os.ReadFile(out.Name())
		return strings.Contains(string(log), `"msg":"reserved is serving"`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := (&proc{socket: socket}).socketClient().WhoAmI(ctx); err != nil {
		t.Errorf("whoami on the socket: %v", err)
	}
	if err := syscall.Kill(tr.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.done:
	case <-time.After(startTimeout):
		t.Fatalf("reserved did not exit within %v", startTimeout)
	}
	if tr.err != nil {
		t.Fatalf("tracing reserved: %v", tr.err)
	}
	if !tr.status.Exited() || tr.status.ExitStatus() != 0 {
		log, _ := os.ReadFile(out.Name())
		t.Errorf("reserved ended with %v:\n%s", tr.status, log)
	}
	t.Logf("looked at the socket file %d times", seen)
	if seen == 0 {
		t.Fatal("the socket file was never seen")
	}
	if wider > 0 {
		t.Errorf("the socket file had permissions up to %v, wider than --socket-mode %#o, at %d of %d looks at it", widest, mode, wider, seen)
	}
}

// traced is a process run under ptrace.
type traced struct {
	pid    int
	done   chan struct{} // Closed when the process has ended, or tracing failed.
	status syscall.WaitStatus
	err    error // Why tracing failed.
}

// startTraced runs program with args and environ, its output going to out,
// under ptrace, and calls stopped at each of its system call stops (on
// entry and on exit) while the stopped thread waits. Tracing follows every
// thread and the exec of reserved by program. It skips the test when the
// system does not allow ptrace, and fails it then when RESERVE_CI is set.
func startTraced(t *testing.T, environ []string, out *os.File, program string, args []string, stopped func()) *traced {
	t.Helper()
	tr := &traced{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(tr.done)
		// Every ptrace request must come from the thread that started
		// the tracee. The thread is never unlocked, so it ends with this
		// goroutine instead of serving others as a tracer.
		runtime.LockOSThread()
		p, err := os.StartProcess(program, append([]string{program}, args...), &os.ProcAttr{
			Env:   environ,
			Files: []*os.File{nil, out, out},
			Sys:   &syscall.SysProcAttr{Ptrace: true},
		})
		if err == nil {
			tr.pid = p.Pid
			defer p.Release()
			// The tracee stops at its first exec.
			var ws syscall.WaitStatus
			if _, err = syscall.Wait4(tr.pid, &ws, syscall.WALL, nil); err == nil {
				err = syscall.PtraceSetOptions(tr.pid, syscall.PTRACE_O_TRACESYSGOOD|syscall.PTRACE_O_TRACECLONE|syscall.PTRACE_O_TRACEEXEC|unix.PTRACE_O_EXITKILL)
			}
			if err == nil {
				err = syscall.PtraceSyscall(tr.pid, 0)
			}
			if err != nil {
				syscall.Kill(tr.pid, syscall.SIGKILL)
			}
		}
		started <- err
		if err == nil {
			tr.status, tr.err = traceLoop(tr.pid, stopped)
		}
	}()
	if err := <-started; err != nil {
		if errors.Is(err, syscall.EPERM) {
			if os.Getenv("RESERVE_CI") != "" {
				t.Fatalf("tracing a process with ptrace is not allowed here (%v), and CI (RESERVE_CI) must run this test", err)
			}
			t.Skipf("SKIPPED: tracing a process with ptrace is not allowed here: %v", err)
		}
		t.Fatalf("start %s under ptrace: %v", program, err)
	}
	t.Cleanup(func() {
		syscall.Kill(tr.pid, syscall.SIGKILL)
		<-tr.done
	})
	return tr
}

// traceLoop resumes the threads of the traced process pid from each stop
// until the process ends, calling stopped at each system call stop, and
// returns how it ended.
func traceLoop(pid int, stopped func()) (syscall.WaitStatus, error) {
	for {
		var ws syscall.WaitStatus
		tid, err := syscall.Wait4(-1, &ws, syscall.WALL, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return ws, fmt.Errorf("wait for the traced process: %w", err)
		}
		if ws.Exited() || ws.Signaled() {
			if tid == pid {
				return ws, nil
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		signal := 0
		switch sig := ws.StopSignal(); {
		case sig == syscall.SIGTRAP|0x80: // A system call stop (PTRACE_O_TRACESYSGOOD).
			stopped()
		case sig == syscall.SIGTRAP && ws.TrapCause() > 0: // An exec or clone event.
		case sig == syscall.SIGSTOP: // A new thread's first stop.
		default: // A signal for the process: deliver it.
			signal = int(sig)
		}
		if err := syscall.PtraceSyscall(tid, signal); err != nil && !errors.Is(err, syscall.ESRCH) {
			return ws, fmt.Errorf("resume thread %d: %w", tid, err)
		}
	}
}
