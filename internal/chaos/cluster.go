package chaos

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/reserve/reserve/internal/pgcluster"
)

// The faults of a run on a PostgreSQL cluster of its own.
const (
	FaultPgRestart  = "pg_restart"  // The primary crashed and restarted.
	FaultPgFailover = "pg_failover" // The primary died or hung, the standby was promoted.
	// FaultPgFrozen counts the failovers whose primary was first frozen
	// with SIGSTOP (and killed only after the new standby streamed).
	FaultPgFrozen = "pg_primary_frozen"
)

// clusterShare is one in how many PostgreSQL runs builds a cluster of its
// own: building one costs seconds.
const clusterShare = 4

// OwnsCluster reports whether the PostgreSQL run of seed builds a cluster
// of its own (a primary with a synchronous standby) and restarts and fails
// over its primary, instead of working in a schema on the shared server.
// About one seed in clusterShare does; the choice is a function of the
// seed alone, so a seed replays it.
func OwnsCluster(seed uint64) bool {
	return mrand.New(mrand.NewPCG(seed, 0x9c1a57e4)).IntN(clusterShare) == 0
}

// startCluster builds the run's cluster and the DSN of its daemons, or,
// when this machine cannot build one (no root, no PostgreSQL binaries),
// notes that the cluster faults are skipped and reports false: the run
// then works on the shared server.
func (r *run) startCluster(ctx context.Context) (bool, error) {
	bin, err := pgcluster.FindBinaries()
	if err != nil {
		r.skip(fmt.Sprintf("%s and %s (a PostgreSQL cluster of the run's own): %v", FaultPgRestart, FaultPgFailover, err))
		return false, nil
	}
	c, err := pgcluster.New(ctx, bin, "", nil)
	if err != nil {
		return false, fmt.Errorf("build a PostgreSQL cluster: %w", err)
	}
	r.cluster = c
	r.appName = "reservechaos_" + randomHex(6)
	r.dsn = c.DSN() + " application_name=" + r.appName
	// Every phase of the run has one cluster fault; they alternate, and
	// the seed says which comes first.
	r.clusterFirst = r.rng.IntN(2)
	return true, nil
}

// clusterFault is the cluster fault planned for a phase: a failover (else
// a restart), whether its primary first hangs, and how many other faults
// of the phase come before it.
type clusterFault struct {
	failover, frozen bool
	after            int
}

// planClusterFault draws the cluster fault of phase, or returns nil when
// the run has no cluster.
func (r *run) planClusterFault(phase int) *clusterFault {
	if r.cluster == nil {
		return nil
	}
	return &clusterFault{failover: (r.clusterFirst+phase)%2 == 1, frozen: r.rng.IntN(2) == 0, after: r.rng.IntN(3)}
}

// breakCluster restarts or fails over the cluster's primary while the
// clients go on; the daemons are not restarted and must find the primary
// again by themselves. A primary that hangs stays frozen until the clients
// got a few answers from the new one, or a while has passed.
func (r *run) breakCluster(cf *clusterFault, stop <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if !cf.failover {
		if err := r.cluster.Restart(ctx); err != nil {
			r.fail(fmt.Errorf("%s: %w", FaultPgRestart, err))
			return
		}
		r.count(r.faults, FaultPgRestart)
		return
	}
	var frozen func()
	if cf.frozen {
		frozen = func() { r.waitAnswers(stop, 10, 10*time.Second) }
	}
	if err := r.cluster.Failover(ctx, frozen); err != nil {
		r.fail(fmt.Errorf("%s: %w", FaultPgFailover, err))
		return
	}
	r.count(r.faults, FaultPgFailover)
	if cf.frozen {
		r.count(r.faults, FaultPgFrozen)
	}
}

// waitAnswers waits until the clients got n more answers, d has passed or
// stop is closed, and reports whether stop is closed.
func (r *run) waitAnswers(stop <-chan struct{}, n int64, d time.Duration) (stopped bool) {
	target := r.answers.Load() + n
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && r.answers.Load() < target {
		select {
		case <-stop:
			return true
		case <-time.After(2 * time.Millisecond):
		}
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// adminDSN is the DSN on which the run's backends can be terminated: the
// cluster's primary, or the shared server.
func (r *run) adminDSN() string {
	if r.cluster != nil {
		return r.cluster.PrimaryDSN("postgres")
	}
	return r.cfg.DSN
}
