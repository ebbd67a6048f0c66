package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/batch"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/intent"
)

// The plan is rewritten when this many outcomes are not yet on disk, or
// planFlushEvery after the first of them came in, whichever is first. A
// crash loses at most these outcomes, and their rows are only resent with
// their own keys, which replays their answers.
const (
	planFlushRows  = 64
	planFlushEvery = 250 * time.Millisecond
)

// maxParallel bounds --parallel.
const maxParallel = 64

// newImportCmd returns "import FILE.csv".
func newImportCmd(env *commandEnv) *cobra.Command {
	var (
		parallel int
		progress string
	)
	cmd := &cobra.Command{
		Use:   "import FILE.csv",
		Short: "Make many reservations from a CSV file, resumably and exactly once per row",
		Long: `import makes one reservation per row of a CSV file with the columns
workshop, quantity and an optional ref (your own reference; it is never sent).

The first line is a header when one of its fields is "workshop" or
"quantity"; the header gives the order of the columns. Without a header the
columns are workshop,quantity[,ref]. Blank lines are skipped. A file with any
bad row (wrong number of columns, a quantity that is not a whole number of at
least 1, an invalid workshop id) is refused as a whole: every bad row is
reported with its line number, nothing is sent and no plan is written.

Before anything is sent, import writes a plan file next to the CSV
(FILE.csv.plan, fsync'd) that gives every row its own operation key. Rows are
then sent with at most --parallel requests at once, and each authoritative
answer (reserved, unavailable, rejected) is recorded in the plan, which is
rewritten atomically as outcomes come in. Running the same import again
resumes: settled rows are skipped, and rows without an authoritative answer
(never sent, timed out, lost, garbled, a server error) are sent again with
their own keys, so the server replays what it already decided and no row is
ever reserved twice. The plan is locked while an import runs: a second import
of the same file exits 2 at once.

A rerun refuses a CSV that changed since its plan was written, naming the
first row that differs, and a plan made by another actor or for another
server. To import a changed file as new reservations, give it a new name (or
move its plan away).

The summary (stdout) counts all rows of the plan: reserved, unavailable,
rejected and unclear. A progress bar is shown on stderr when it is a
terminal (--progress).

Exit status:
   0  every row is settled (reserved, unavailable or rejected)
  75  some rows are still unclear: run the same import again
   2  usage error or refused (bad rows, changed CSV, another import running,
      another actor or server): nothing was sent
   1  anything else`,
		Example: `  reservectl import orders.csv
  reservectl import --parallel 16 orders.csv
  reservectl import orders.csv || reservectl import orders.csv   # settle what was unclear
  reservectl --json import orders.csv

  # orders.csv
  workshop,quantity,ref
  workshop-demo,2,order-1001
  workshop-demo,1,order-1002`,
		Args: exactArgs(1, "one CSV file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if parallel < 1 || parallel > maxParallel {
				return usageErrorf("--parallel must be from 1 to %d, not %d", maxParallel, parallel)
			}
			var show bool
			switch progress {
			case "auto":
				show = isTerminal(env.stderr)
			case "always":
				show = true
			case "never":
			default:
				return usageErrorf("--progress %q: use auto, always or never", progress)
			}
			return env.importCSV(cmd.Context(), args[0], parallel, show)
		},
	}
	cmd.Flags().IntVar(&parallel, "parallel", 4, "how many rows are sent at once")
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), always or never")
	return cmd
}

// importSummary is what --json prints at the end of an import.
type importSummary struct {
	CSV  string `json:"csv"`
	Plan string `json:"plan"`
	batch.Summary
	// Sent counts the rows this run sent, Skipped the rows that were
	// settled before it started.
	Sent    int `json:"sent"`
	Skipped int `json:"skipped"`
}

// unclearError ends an import that left rows without an authoritative
// outcome; it exits 75.
type unclearError struct {
	n    int
	plan string
}

func (e *unclearError) Error() string {
	if e.n == 1 {
		return fmt.Sprintf("1 row is still unclear (its key is in %s); run the same import again to settle it", e.plan)
	}
	if e.n == 1 {
		return fmt.Sprintf("1 row is still unclear (its key is in %s); run the same import again to settle it", e.plan)
	}
	return fmt.Sprintf("%d rows are still unclear (their keys are in %s); run the same import again to settle them", e.n, e.plan)
}

// ExitCode makes the import exit 75.
func (e *unclearError) ExitCode() int { return ExitUnknown }

// importCSV runs or resumes the import of path.
func (env *commandEnv) importCSV(ctx context.Context, path string, parallel int, showProgress bool) error {
	server, err := env.serverID()
	if err != nil {
		return &usageError{err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return &usageError{err: fmt.Errorf("import: %w", err)}
	}
	rows, err := batch.ParseCSV(path, f)
	f.Close()
	if err != nil {
		return &usageError{err: err}
	}
	pf, err := batch.OpenPlan(path)
	if err != nil {
		if errors.Is(err, batch.ErrBusy) {
			return &usageError{err: err}
		}
		return err
	}
	defer pf.Close()
	plan, err := pf.Load()
	if err != nil {
		return &usageError{err: err}
	}
	c := env.client()
	var pending []int
	if plan != nil {
		if err := plan.Compare(path, pf.Path(), rows); err != nil {
			return &usageError{err: err}
		}
		if plan.Server != server {
			return usageErrorf("the plan %s was made for %s, but you are talking to %s; nothing was sent", pf.Path(), plan.Server, server)
		}
		fmt.Fprintf(env.stderr, "resuming %s: %d of %s settled before\n", pf.Path(), len(rows)-plan.Summary().Unclear, count(len(rows), "row"))
		for i := range plan.Rows {
			if !plan.Rows[i].Settled() {
				pending = append(pending, i)
			}
		}
	}
	if plan == nil || len(pending) > 0 {
		who, err := env.whoami(ctx, c)
		if err != nil {
			return fmt.Errorf("%w; nothing was sent", err)
		}
		if plan == nil {
			if plan, err = batch.NewPlan(filepath.Base(path), rows, server, who.Actor, time.Now()); err != nil {
				return err
			}
			// The keys are on disk before the first row is sent.
			if err := pf.Save(plan); err != nil {
				return fmt.Errorf("%w; nothing was sent", err)
			}
			fmt.Fprintf(env.stderr, "plan %s: %s, one operation key each\n", pf.Path(), count(len(rows), "row"))
			for i := range plan.Rows {
				pending = append(pending, i)
			}
		} else if plan.Actor != who.Actor {
			return usageErrorf("the plan %s belongs to actor %q but you are %q; its keys are %s's, so nothing was sent", pf.Path(), plan.Actor, who.Actor, plan.Actor)
		}
	}
	sent, err := env.sendRows(ctx, c, pf, plan, pending, parallel, showProgress)
	if err != nil {
		return err
	}
	sum := importSummary{CSV: path, Plan: pf.Path(), Summary: plan.Summary(), Sent: sent, Skipped: len(plan.Rows) - len(pending)}
	if err := env.print(sum, func(w io.Writer) error {
		fmt.Fprintf(w, "%s: %s: %d reserved, %d unavailable, %d rejected, %d unclear\n",
			filepath.Base(path), count(sum.Rows, "row"), sum.Reserved, sum.Unavailable, sum.Rejected, sum.Unclear)
		return nil
	}); err != nil {
		return err
	}
	if sum.Unclear > 0 {
		return &unclearError{n: sum.Unclear, plan: pf.Path()}
	}
	return nil
}

// rowResult is the outcome of one send of one plan row.
type rowResult struct {
	index int
	o     outcome
}

// sendRows sends the pending rows of plan with at most parallel requests at
// once, records their outcomes and rewrites the plan in batches. It returns
// how many rows it sent.
func (env *commandEnv) sendRows(ctx context.Context, c *client.Client, pf *batch.PlanFile, plan *batch.Plan, pending []int, parallel int, showProgress bool) (int, error) {
	if len(pending) == 0 {
		return 0, nil
	}
	// At most parallel rows are in flight: each takes a slot of sem before
	// its goroutine starts. A cancelled ctx stops the sending of new rows.
	results := make(chan rowResult)
	go func() {
		defer close(results)
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		defer wg.Wait()
		for _, i := range pending {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			row := plan.Rows[i]
			wg.Go(func() {
				defer func() { <-sem }()
				cctx, cancel := env.callContext(ctx)
				op := client.Reserving(row.Request())
				res, err := c.Send(cctx, row.Key, op)
				cancel()
				results <- rowResult{index: i, o: outcomeOf(op, row.Key, res, err, env.timeout)}
			})
		}
	}()

	bar := newProgressBar(env.stderr, showProgress, plan)
	tick := time.NewTicker(planFlushEvery)
	defer tick.Stop()
	dirty, sent := 0, 0
	var saveErr error
	flush := func() {
		if dirty == 0 || saveErr != nil {
			return
		}
		if err := pf.Save(plan); err != nil {
			saveErr = err
			return
		}
		dirty = 0
	}
	for {
		select {
		case res, ok := <-results:
			if !ok {
				flush()
				bar.done()
				if saveErr != nil {
					return sent, fmt.Errorf("record outcomes: %w", saveErr)
				}
				return sent, nil
			}
			sent++
			r := &plan.Rows[res.index]
			r.Attempts++
			if res.o.authoritative() {
				// A pending row is open, so settling it cannot fail.
				r.Settle(res.o.rowOutcome())
				r.LastError = ""
			} else {
				r.LastError = res.o.why
				fmt.Fprintf(bar.out(), "line %d (%s): unclear: %s\n", r.Line, r.Row, r.LastError)
			}
			if r.Outcome != nil && r.Outcome.Status == intent.StatusRejected {
				fmt.Fprintf(bar.out(), "line %d (%s): rejected: %s: %s\n", r.Line, r.Row, r.Outcome.Code, r.Outcome.Detail)
			}
			dirty++
			if dirty >= planFlushRows {
				flush()
			}
			bar.update()
		case <-tick.C:
			flush()
		}
	}
}

// rowOutcome is the authoritative o as an import plan records it.
func (o outcome) rowOutcome() batch.Outcome {
	b := batch.Outcome{Status: o.status, HTTPStatus: o.res.Status, ReservationID: o.res.Answer.ReservationID}
	if p := o.res.Problem; p != nil {
		b.Code, b.Detail = p.Code, p.Message
	} else {
		b.Response = o.res.Body
	}
	return b
}

// progressBar draws the import's progress on one terminal line.
type progressBar struct {
	w     io.Writer
	on    bool
	plan  *batch.Plan
	last  time.Time
	drawn bool
}

func newProgressBar(w io.Writer, on bool, plan *batch.Plan) *progressBar {
	b := &progressBar{w: w, on: on, plan: plan}
	b.draw()
	return b
}

// out returns the writer for a message line: it clears the bar first, and
// the next update draws it again below the message.
func (b *progressBar) out() io.Writer {
	if b.on && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
		b.drawn = false
	}
	return b.w
}

// update redraws the bar at most every 50ms.
func (b *progressBar) update() {
	if b.on && (!b.drawn || time.Since(b.last) >= 50*time.Millisecond) {
		b.draw()
	}
}

// done draws the final state and ends the line.
func (b *progressBar) done() {
	if b.on {
		b.draw()
		fmt.Fprintln(b.w)
	}
}

func (b *progressBar) draw() {
	if !b.on {
		return
	}
	s := b.plan.Summary()
	settled := s.Rows - s.Unclear
	const width = 30
	fill := 0
	if s.Rows > 0 {
		fill = settled * width / s.Rows
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %d/%d settled · %d reserved · %d unavailable · %d rejected",
		strings.Repeat("#", fill), strings.Repeat("-", width-fill), settled, s.Rows, s.Reserved, s.Unavailable, s.Rejected)
	b.last, b.drawn = time.Now(), true
}
