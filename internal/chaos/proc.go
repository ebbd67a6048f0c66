package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startTimeout bounds how long a daemon may take to start.
const startTimeout = 60 * time.Second

// daemon is one reserved process of a run.
type daemon struct {
	cmd     *exec.Cmd
	logs    *logBuffer
	done    chan struct{} // Closed when the process has exited.
	err     error
	armed   string // The failpoint armed in this process, if any.
	stopped bool   // The run killed or stopped it (rather than a failpoint).
}

// logBuffer collects a process's output; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 4<<20 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// find returns the first JSON log line whose msg is msg, or nil.
func (b *logBuffer) find(msg string) map[string]any {
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(msg)) {
			continue
		}
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["msg"] == msg {
			return m
		}
	}
	return nil
}

// crashedAt returns the failpoint at which the daemon crashed, or "" if
// its output says it did not: reserve's own failpoints write "failpoint
// kill: NAME", and gofail's panic action (bbolt's failpoints) panics with
// "failpoint panic: …".
func (d *daemon) crashedAt() string {
	s := d.logs.String()
	if strings.Contains(s, "failpoint kill: ") || strings.Contains(s, "failpoint panic: ") {
		return d.armed
	}
	return ""
}

// startDaemon runs bin with args and env and waits until it logs that it
// serves.
func startDaemon(bin string, args, env []string, armed string) (*daemon, error) {
	d := &daemon{logs: &logBuffer{}, done: make(chan struct{}), armed: armed}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	deadline := time.After(startTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if d.logs.find("reserved is serving") != nil {
			return d, nil
		}
		select {
		case <-d.done:
			return d, &exitedError{logs: d.logs.String(), err: d.err}
		case <-deadline:
			d.kill()
			return nil, fmt.Errorf("reserved did not serve within %v:\n%s", startTimeout, tail(d.logs.String()))
		case <-tick.C:
		}
	}
}

// exitedError is a daemon that exited before it served.
type exitedError struct {
	logs string
	err  error
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("reserved exited before it served (%v):\n%s", e.err, tail(e.logs))
}

// kill kills the daemon with SIGKILL and waits for it to exit.
func (d *daemon) kill() {
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop stops the daemon with SIGTERM and returns an error unless it
// exited cleanly.
func (d *daemon) stop() error {
	d.stopped = true
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(startTimeout):
		d.kill()
		return fmt.Errorf("reserved did not stop within %v after SIGTERM", startTimeout)
	}
	if d.err != nil {
		return fmt.Errorf("reserved exited with %v after SIGTERM:\n%s", d.err, tail(d.logs.String()))
	}
	return nil
}

// exited reports whether the process has exited.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// tail is the end of a process's output, for an error message.
func tail(s string) string {
	const n = 3000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
