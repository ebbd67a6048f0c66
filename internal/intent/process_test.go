package intent_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/paths/pathstest"
)

var crashKills = flag.Int("intent.kills", 25, "how many times TestCrashDuringSaves kills the writer")

// The environment of a re-executed test binary: which helper to run and on
// which state file.
const (
	helperEnv     = "INTENT_TEST_HELPER"
	helperPathEnv = "INTENT_TEST_STATE"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		if err := runHelper(name, os.Getenv(helperPathEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "helper %s: %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper is the body of a re-executed test binary. It talks to the test
// over its standard output (one line per event) and, for "hold", waits for
// the end of its standard input.
func runHelper(name, path string) error {
	switch name {
	case "hold":
		// Take the lock, say so, hold it until stdin closes, release it.
		j, err := intent.Open(path)
		if err != nil {
			return err
		}
		fmt.Println("locked")
		if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
			return err
		}
		return j.Close()
	case "try":
		// Try the lock once and report "busy" or "locked".
		j, err := intent.Open(path)
		if errors.Is(err, intent.ErrBusy) {
			fmt.Println("busy")
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Println("locked")
		return j.Close()
	case "save":
		return saveForever(path)
	}
	return fmt.Errorf("unknown helper %q", name)
}

// saveForever continues (or starts) the intent in path and saves it again and
// again until it is killed: every save counts an attempt and changes the
// length of the record (the actor's name), so a torn write cannot look
// valid. It prints "ready" once the intent is loaded and the number of
// attempts after every completed save.
func saveForever(path string) error {
	j, err := intent.Open(path)
	if err != nil {
		return err
	}
	in, err := j.Load()
	if err != nil {
		return err
	}
	if in == nil {
		if in, err = intent.NewReserve(testRequest, testServer, testActor); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	for {
		in.Actor = "a" + strings.Repeat("x", 1+(in.Attempts*7)%40)
		if err := j.RecordAttempt(in); err != nil {
			return err
		}
		fmt.Println(in.Attempts)
	}
}

// child is a re-executed test binary running one helper.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer
}

// startHelper starts the test binary as the helper name on path.
func startHelper(t *testing.T, name, path string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: exec.Command(exe)}
	c.cmd.Env = append(os.Environ(), helperEnv+"="+name, helperPathEnv+"="+path, pathstest.QuickRaceExit())
	c.cmd.Stderr = &c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.lines = bufio.NewScanner(stdout)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// next returns the child's next line; it blocks until the child writes one
// or exits, and fails the test when the child exits first.
func (c *child) next(t *testing.T) string {
	t.Helper()
	if !c.lines.Scan() {
		c.stdin.Close()
		err := c.cmd.Wait()
		t.Fatalf("helper ended without a line (%v, %v): %s", c.lines.Err(), err, c.stderr.String())
	}
	return c.lines.Text()
}

// expect fails the test unless the child's next line is want.
func (c *child) expect(t *testing.T, want string) {
	t.Helper()
	if got := c.next(t); got != want {
		t.Fatalf("helper said %q, want %q; stderr: %s", got, want, c.stderr.String())
	}
}

// wait waits for the child to exit and fails the test if it failed.
func (c *child) wait(t *testing.T) {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v: %s", err, c.stderr.String())
	}
}

func TestLockIsExclusiveAcrossProcesses(t *testing.T) {
	path := statePath(t)

	// A child holds the lock: this process cannot take it.
	holder := startHelper(t, "hold", path)
	holder.expect(t, "locked")
	if _, err := intent.Open(path); !errors.Is(err, intent.ErrBusy) {
		t.Fatalf("Open while another process holds the lock = %v, want ErrBusy", err)
	}
	holder.stdin.Close() // Tells the holder to release the lock and exit.
	holder.wait(t)
	j := mustOpen(t, path)

	// This process holds the lock: a child cannot take it.
	try := startHelper(t, "try", path)
	try.expect(t, "busy")
	try.wait(t)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	try = startHelper(t, "try", path)
	try.expect(t, "locked")
	try.wait(t)
}

func TestLockIsReleasedWhenTheHolderIsKilled(t *testing.T) {
	path := statePath(t)
	holder := startHelper(t, "hold", path)
	holder.expect(t, "locked")
	if _, err := intent.Open(path); !errors.Is(err, intent.ErrBusy) {
		t.Fatalf("Open while another process holds the lock = %v, want ErrBusy", err)
	}
	if err := holder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.cmd.Wait() // Killed: the error is expected.
	mustOpen(t, path)
}

// TestCrashDuringSaves kills a process that saves the intent in a loop with
// SIGKILL at random points, and proves after every kill that the state file
// loads, still holds the same intent, and counts at least every attempt the
// process reported as saved; and that the next Open removes the temporary
// file a kill between create and rename leaves behind.
func TestCrashDuringSaves(t *testing.T) {
	if *crashKills < 1 {
		t.Skip("-intent.kills is 0")
	}
	path := statePath(t)
	var key string
	var leftovers, unsaved int
	for kill := range *crashKills {
		c := startHelper(t, "save", path)
		c.expect(t, "ready")
		reported := 0
		for range rand.IntN(60) {
			n, err := strconv.Atoi(c.next(t))
			if err != nil {
				t.Fatal(err)
			}
			reported = n
		}
		if err := c.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Wait(); err == nil {
			t.Fatalf("kill %d: the saver exited by itself: %s", kill, c.stderr.String())
		}

		// A save that was killed between create and rename leaves its
		// temporary file; it must never be the state file itself.
		dir := filepath.Dir(path)
		if names := dirNames(t, dir); len(names) > 2 {
			leftovers++
		}
		j, err := intent.Open(path)
		if err != nil {
			t.Fatalf("kill %d: Open after the kill: %v", kill, err)
		}
		for _, name := range dirNames(t, dir) {
			if name != filepath.Base(path) && name != filepath.Base(path)+".lock" {
				t.Errorf("kill %d: after Open the directory still holds %q", kill, name)
			}
		}
		in, err := j.Load()
		if err != nil {
			t.Fatalf("kill %d: the state file does not load after a kill: %v", kill, err)
		}
		if in == nil {
			// Killed before its first save completed: nothing can be lost.
			if reported != 0 {
				t.Fatalf("kill %d: no intent, but %d attempts were reported saved", kill, reported)
			}
			unsaved++
		} else {
			if key == "" {
				key = string(in.Key)
			}
			if string(in.Key) != key || !in.IsOpen() {
				t.Fatalf("kill %d: the state file holds %+v, want the open intent %s", kill, in, key)
			}
			if in.Attempts < reported {
				t.Fatalf("kill %d: %d attempts on file, but %d were reported saved", kill, in.Attempts, reported)
			}
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills: %d left a temporary file, %d came before the first save", *crashKills, leftovers, unsaved)
}
