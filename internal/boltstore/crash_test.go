package boltstore_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
)

var crashCycles = flag.Int("crash.cycles", 20, "how many times TestCrashKill9 kills the writer")

// crashChildEnv names the database a re-executed test binary should hammer.
const crashChildEnv = "BOLTSTORE_CRASH_CHILD_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		if err := crashChild(path); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(freelistKillEnv); path != "" {
		fmt.Fprintln(os.Stderr, "freelist kill child:", freelistKillChild(path))
		os.Exit(1)
	}
	code := m.Run()
	cleanupHot1M()
	os.Exit(code)
}

// crashChild reserves in a loop on 8 goroutines (with some repeated keys and
// a small workshop that runs full) and prints "ready", then one line
// "<reservation id> <actor> <key>" for each first 201 after Reserve returned,
// that is after its commit. It runs until it is killed.
func crashChild(path string) error {
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return err
	}
	eng := engine.New(s)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	report := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(line + "\n")
		out.Flush()
	}
	report("ready")
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			actor := fmt.Sprintf("user%d", g)
			var key engine.OperationKey
			var req engine.Request
			for i := 0; ; i++ {
				if i%5 != 4 { // Every fifth request retries the previous intent.
					key = engine.OperationKey(uuid.NewString())
					if i%2 == 0 { // Both kinds of key, which are stored apart.
						key = engine.OperationKey(uuid.Must(uuid.NewV7()).String())
					}
					req = engine.Request{Workshop: "big", Quantity: 1 + i%2}
					if i%3 == 0 {
						req = engine.Request{Workshop: "small", Quantity: 1}
					}
				}
				outc, err := eng.Reserve(context.Background(), actor, key, req)
				if err != nil {
					errs <- err
					return
				}
				if outc.Answer.Status == engine.StatusReserved && !outc.Replayed {
					report(fmt.Sprintf("%s %s %s", outc.Answer.ReservationID, actor, key))
				}
			}
		}()
	}
	return <-errs
}

// TestCrashKill9 kills a writer process with SIGKILL at random moments and
// proves after each kill that the file opens, Check is clean and every
// reservation the writer reported as committed is there with its receipt.
func TestCrashKill9(t *testing.T) {
	path := crashWorkshops(t)
	ctx := context.Background()
	reported := map[string]string{} // reservation id → "actor key"
	for cycle := 0; cycle < *crashCycles; cycle++ {
		lines := runAndKill(t, path, rand.IntN(300))
		for _, line := range lines {
			id, who, _ := strings.Cut(line, " ")
			reported[id] = who
		}
		s, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatalf("cycle %d: open after kill: %v", cycle, err)
		}
		findings, err := s.Check(ctx)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		for _, f := range findings {
			t.Errorf("cycle %d: finding: %s", cycle, f)
		}
		eng := engine.New(s)
		for id, who := range reported {
			actor, key, _ := strings.Cut(who, " ")
			r, err := eng.Reservation(ctx, engine.Principal{Actor: actor}, id)
			if err != nil || string(r.OperationKey) != key {
				t.Errorf("cycle %d: reported reservation %s (%s): %+v, %v", cycle, id, who, r, err)
			}
			rec, err := eng.Operation(ctx, actor, engine.OperationKey(key))
			if err != nil || rec.ReservationID != id {
				t.Errorf("cycle %d: receipt of %s: %+v, %v", cycle, who, rec, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if len(reported) == 0 {
		t.Fatal("the writer never reported a committed reservation, so nothing was proven")
	}
	t.Logf("%d kills, %d reported reservations verified", *crashCycles, len(reported))
}

// crashWorkshops returns a closed database with the workshops the crash
// child reserves in.
func crashWorkshops(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "reserved.db")
	s := mustOpenPath(t, path)
	eng := engine.New(s)
	for id, capacity := range map[string]int{"big": 1_000_000, "small": 50} {
		if _, _, err := eng.PutWorkshop(context.Background(), id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runAndKill starts the writer, kills it with SIGKILL after it reported
// after reservations (a random moment inside its write loop), and returns
// every line it reported before it died.
func runAndKill(t *testing.T, path string, after int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("writer did not start: %q %v", sc.Text(), sc.Err())
	}
	var lines []string
	for len(lines) < after && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // Lines written before the kill landed.
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer ended with %v, not by SIGKILL", err)
	}
	return lines
}
