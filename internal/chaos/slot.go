package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/reserve/reserve/internal/failpoint"
)

// The failpoints inside bbolt's commit that a bolt run arms (gofail
// comments of bbolt's own, turned on in the failpoint build): after the
// data pages were written and before they are synced, and after the meta
// page was written and before it is synced.
const (
	BoltBeforeSyncData = "beforeSyncDataPages"
	BoltBeforeSyncMeta = "beforeSyncMetaPage"
)

// CrashSigkill names the crashes the run causes with SIGKILL at a random
// moment.
const CrashSigkill = "sigkill"

// slot is one daemon of a run, restarted on the same address and store
// whenever it dies.
type slot struct {
	r      *run
	idx    int
	addr   string
	socket string
	rng    *rand.Rand // Chooses the failpoint armed in each life.

	mu          sync.Mutex
	d           *daemon
	closing     bool
	supervising chan struct{} // Closed by stopSupervising.
	once        sync.Once
}

// args are reserved's arguments for the slot.
func (s *slot) args() []string {
	r := s.r
	args := []string{"serve", "--listen", s.addr, "--socket", s.socket, "--log-format", "json", "--no-demo",
		"--notify-url", r.sink.url, "--receipt-retention", receiptRetention.String(), "--shutdown-timeout", "5s",
		"--delivery-min-backoff", "200ms",
		// The sink answers at once; short attempts and leases let the
		// deliveries a killed daemon claimed go out again within seconds.
		"--delivery-timeout", "2s", "--delivery-lease", "8s"}
	if r.cfg.Store == "postgres" {
		return append(args, "--store", "postgres", "--dsn", r.dsn)
	}
	return append(args, "--db", r.dbPath())
}

// arm chooses whether the next life of the daemon has a failpoint armed,
// which, and at which hit it fires; it returns the failpoint's name and
// GOFAIL_FAILPOINTS, or two empty strings.
func (s *slot) arm() (string, string) {
	if s.rng.IntN(100) >= 45 {
		return "", ""
	}
	points := []string{failpoint.ServerAfterCommit, failpoint.ServerAfterCommit, failpoint.OutboxBeforeMark}
	if s.r.cfg.Store == "bolt" {
		points = append(points, BoltBeforeSyncData, BoltBeforeSyncMeta)
	}
	p := points[s.rng.IntN(len(points))]
	act := `return("kill")`
	if p == BoltBeforeSyncData || p == BoltBeforeSyncMeta {
		act = "panic" // bbolt's failpoints carry no value; gofail's panic ends the process there.
	}
	return p, fmt.Sprintf("%s=%d*off->%s", p, 1+s.rng.IntN(40), act)
}

// start starts a life of the daemon, with a failpoint armed if armed and
// the slot's generator says so. A life that crashes at its failpoint while
// it starts counts as a crash, and the daemon is started again.
func (s *slot) start(armed bool) error {
	deadline := time.Now().Add(startTimeout)
	for {
		name, terms := "", ""
		if armed {
			name, terms = s.arm()
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.r.dir, failpoint.EnvClock + "=" + s.r.clockFile}
		if terms != "" {
			env = append(env, "GOFAIL_FAILPOINTS="+terms)
		}
		d, err := startDaemon(s.r.cfg.Bin.Reserved, s.args(), env, name)
		if err == nil {
			s.d = d
			return nil
		}
		var exited *exitedError
		if !errors.As(err, &exited) || time.Now().After(deadline) {
			return fmt.Errorf("daemon %d: %w", s.idx, err)
		}
		switch at := d.crashedAt(); {
		case at != "":
			s.r.count(s.r.crashes, at)
		case s.r.cfg.Store == "postgres" || s.r.diskDir != "":
			// A killed backend fails a start (its migration's
			// connection is gone), and so may a full disk, which is
			// freed soon: the daemon exits with an error, as it
			// should, and is started again.
			s.r.count(s.r.faults, "start_failed")
		default:
			return fmt.Errorf("daemon %d: %w", s.idx, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// supervise restarts the daemon whenever it dies of its own accord (at a
// failpoint) until stopSupervising.
func (s *slot) supervise() {
	stop := s.supervising
	for {
		s.mu.Lock()
		d := s.d
		s.mu.Unlock()
		select {
		case <-stop:
			return
		case <-d.done:
		}
		s.mu.Lock()
		if s.d == d && !d.stopped && !s.closing {
			if at := d.crashedAt(); at != "" {
				s.r.count(s.r.crashes, at)
			} else {
				s.r.fail(fmt.Errorf("daemon %d died of no fault: %v\n%s", s.idx, d.err, tail(d.logs.String())))
			}
			if err := s.start(true); err != nil {
				s.r.fail(err)
				s.closing = true
			}
		}
		s.mu.Unlock()
		if s.closing {
			return
		}
	}
}

// stopSupervising ends supervise; the daemon keeps running.
func (s *slot) stopSupervising() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	s.once.Do(func() { close(s.supervising) })
}

// killRestart kills the daemon with SIGKILL and starts its next life.
func (s *slot) killRestart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	if !s.d.exited() {
		s.d.kill()
		s.r.count(s.r.crashes, CrashSigkill)
	}
	if err := s.start(true); err != nil {
		s.r.fail(err)
		s.closing = true
	}
}

// restartClean gives the daemon a last life without failpoints.
func (s *slot) restartClean() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.d != nil && !s.d.exited() {
		if s.d.armed == "" {
			return nil
		}
		s.d.kill()
	}
	return s.start(false)
}
