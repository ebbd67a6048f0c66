//go:build linux

package boltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// threadsWithNice counts the threads of this process whose nice value is
// nice, from /proc/self/task/*/stat (field 19; the command name before it
// may hold spaces, so the fields are counted after its closing paren).
func threadsWithNice(t *testing.T, nice int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil || len(stats) == 0 {
		t.Fatalf("list the threads: %v (%d found)", err, len(stats))
	}
	n := 0
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // The thread ended.
		}
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		v, err := strconv.Atoi(fields[19-3])
		if err != nil {
			t.Fatalf("%s: nice field %q: %v", path, fields[19-3], err)
		}
		if v == nice {
			n++
		}
	}
	return n
}

// mayRaisePriority reports whether this process has CAP_SYS_NICE in its
// effective capabilities (bit 23 of CapEff in /proc/self/status): root
// usually has, but not in every container.
func mayRaisePriority(t *testing.T) bool {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", hex, err)
			}
			const capSysNice = 23
			return caps&(1<<capSysNice) != 0
		}
	}
	t.Fatal("no CapEff line in /proc/self/status")
	return false
}

// reserveOnce runs one Update through the committer.
func reserveOnce(t *testing.T, s *boltstore.Store) {
	t.Helper()
	err := s.Update(context.Background(), func(tx engine.Tx) error {
		return tx.PutWorkshop(engine.Workshop{ID: "w", Capacity: 1, MaxQuantity: 1, Version: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCommitterNice(t *testing.T) {
	// A raised priority: a process with CAP_SYS_NICE (root, as in CI) gets
	// it, any other is refused and the committer runs at the process's
	// priority.
	for _, nice := range []int{-5} {
		t.Run(strconv.Itoa(nice), func(t *testing.T) {
			before := threadsWithNice(t, nice)
			s, err := boltstore.Open(filepath.Join(t.TempDir(), "reserved.db"), boltstore.Options{CommitterNice: nice})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, niceErr := s.CommitterNice()
			if got != nice {
				t.Errorf("CommitterNice() = %d, want %d as asked", got, nice)
			}
			switch may := mayRaisePriority(t); {
			case may && niceErr == nil:
				if n := threadsWithNice(t, nice); n != before+1 {
					t.Errorf("%d threads have nice %d, want %d: only the committer's changes", n, nice, before+1)
				}
			case !may && (errors.Is(niceErr, syscall.EACCES) || errors.Is(niceErr, syscall.EPERM)):
				if n := threadsWithNice(t, nice); n != before {
					t.Errorf("%d threads have nice %d after a refusal, want %d", n, nice, before)
				}
			default:
				t.Fatalf("CommitterNice() error = %v", niceErr)
			}
			reserveOnce(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// The committer's thread ends with it instead of serving other
			// goroutines at its priority.
			servertest.Eventually(t, 5*time.Second, "the committer's thread to end", func() bool {
				return threadsWithNice(t, nice) == before
			})
		})
	}
	t.Run("0", func(t *testing.T) {
		s := mustOpen(t, boltstore.Options{})
		if nice, err := s.CommitterNice(); nice != 0 || err != nil {
			t.Errorf("CommitterNice() = %d, %v without one asked for, want 0, nil", nice, err)
		}
		reserveOnce(t, s)
	})
}
