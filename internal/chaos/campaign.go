package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// Summary adds up the runs of a campaign.
type Summary struct {
	Runs, Ops, Ambiguous, Crashes, Violations, Unknown int
	Sends                                              int64
	ByStore, OpsByVia, Atomic, Waitlist                map[string]int
	CrashesBy, FaultsBy                                map[string]int
	Failed                                             []uint64 // Seeds with violations.
	Skipped                                            map[string]int
	Elapsed                                            time.Duration
}

// Add adds a run's result.
func (s *Summary) Add(r Result) {
	if s.ByStore == nil {
		s.ByStore, s.OpsByVia, s.CrashesBy, s.FaultsBy, s.Skipped = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
		s.Atomic, s.Waitlist = map[string]int{}, map[string]int{}
	}
	s.Runs++
	s.Ops += r.Ops
	s.Ambiguous += r.Ambiguous
	s.Sends += r.Sends
	s.Crashes += r.CrashTotal()
	s.Violations += len(r.Violations)
	s.Unknown += r.Unknown
	store := fmt.Sprintf("%s×%d", r.Config.Store, r.Config.Daemons)
	if r.Config.Cluster {
		store += "+cluster"
	}
	s.ByStore[store]++
	for k, v := range r.Crashes {
		s.CrashesBy[k] += v
	}
	for k, v := range r.OpsByVia {
		s.OpsByVia[k] += v
	}
	for k, v := range r.Atomic {
		s.Atomic[k] += v
	}
	for k, v := range r.Waitlist {
		s.Waitlist[k] += v
	}
	for k, v := range r.Faults {
		s.FaultsBy[k] += v
	}
	for _, k := range r.Skipped {
		s.Skipped[k]++
	}
	if len(r.Violations) > 0 {
		s.Failed = append(s.Failed, r.Config.Seed)
	}
}

// Write writes the summary, with the failpoints that never fired.
func (s *Summary) Write(w io.Writer, points []string) {
	fmt.Fprintf(w, "summary: runs=%d runs_by_store=%s operations=%d sends=%d ambiguous=%d crash_restart_cycles=%d violations=%d undecided_partitions=%d elapsed=%s\n",
		s.Runs, counts(s.ByStore), s.Ops, s.Sends, s.Ambiguous, s.Crashes, s.Violations, s.Unknown, s.Elapsed.Round(time.Second))
	fmt.Fprintf(w, "operations by front end: %s\n", counts(s.OpsByVia))
	fmt.Fprintf(w, "atomic batch decisions: %s\n", counts(s.Atomic))
	fmt.Fprintf(w, "waiting lists: %s\n", counts(s.Waitlist))
	fmt.Fprintf(w, "crashes by cause: %s\n", counts(s.CrashesBy))
	fmt.Fprintf(w, "other faults: %s\n", counts(s.FaultsBy))
	var never []string
	for _, p := range points {
		if s.CrashesBy[p] == 0 {
			never = append(never, p)
		}
	}
	fmt.Fprintf(w, "failpoint coverage: %d of %d fired", len(points)-len(never), len(points))
	if len(never) > 0 {
		fmt.Fprintf(w, "; never: %v", never)
	}
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(maps.Keys(s.Skipped)) {
		fmt.Fprintf(w, "skipped in %d runs: %s\n", s.Skipped[k], k)
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(w, "failing seeds (replay with --seed S): %v\n", s.Failed)
	}
}

// AllPoints are every failpoint a campaign arms, by the names its crash
// counts use.
func AllPoints(withBolt bool) []string {
	ps := []string{"serverAfterCommit", "outboxBeforeMark", "reservectl_importBeforeCheckpoint"}
	if withBolt {
		ps = append(ps, BoltBeforeSyncData, BoltBeforeSyncMeta)
	}
	return ps
}

// RunCampaign runs cfgs, parallel at a time, writing each run's line to w
// as it ends, and returns the summary. It starts no run once ctx has
// ended or, unless it is zero, after until.
func RunCampaign(ctx context.Context, cfgs []Config, w io.Writer, until time.Time, parallel int) Summary {
	var (
		s    Summary
		mu   sync.Mutex
		wg   sync.WaitGroup
		next = make(chan Config)
	)
	start := time.Now()
	for range max(parallel, 1) {
		wg.Go(func() {
			for cfg := range next {
				res, err := Run(ctx, cfg)
				if ctx.Err() != nil {
					// An interrupted run is no evidence either way.
					mu.Lock()
					fmt.Fprintf(w, "seed=%d interrupted\n", cfg.Seed)
					mu.Unlock()
					continue
				}
				if err != nil {
					// A run that could not be set up is a failed run
					// too: its daemons did not start, or its database
					// was not there.
					res.Violations = append(res.Violations, Violation{"setup", err.Error()})
				}
				mu.Lock()
				s.Add(res)
				fmt.Fprintln(w, res.Line())
				mu.Unlock()
			}
		})
	}
	for _, cfg := range cfgs {
		if ctx.Err() != nil || (!until.IsZero() && time.Now().After(until)) {
			break
		}
		next <- cfg
	}
	close(next)
	wg.Wait()
	s.Elapsed = time.Since(start)
	return s
}
