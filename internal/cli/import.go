package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/batch"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/intent"
)

// The plan is rewritten once a batch's answer leaves this many outcomes
// not yet on disk, or planFlushEvery after the first of them came in,
// whichever is first, but never sooner after the last rewrite than
// planFlushSpacing times the time that rewrite took: a rewrite costs the
// whole plan, so a large plan is rewritten less often and rewriting takes
// at most a fixed share of the import. The outcomes of one batch are
// written together. A crash loses at most the outcomes since the last
// rewrite, and their rows are only resent with their own keys, which
// replays their answers.
const (
	planFlushRows    = 64
	planFlushEvery   = 250 * time.Millisecond
	planFlushSpacing = 4
)

// maxParallel bounds --parallel.
const maxParallel = 64

// defaultBatchSize is the default of --batch-size, which is at most
// engine.MaxBatchItems.
const defaultBatchSize = 200

// newImportCmd returns "import FILE.csv".
func newImportCmd(env *commandEnv) *cobra.Command {
	var (
		parallel  int
		batchSize int
		progress  string
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
then sent in batches of --batch-size rows (one request each, POST
/api/v1/batches, not atomic: every row is decided on its own, exactly as a
single reservation under its own key; --batch-size 1 sends each row as a
batch of one), with at most --parallel batches at once. Each row's
authoritative answer (reserved, unavailable, rejected) is recorded in the
plan, which is rewritten atomically as the batches' answers come in. A batch
without an authoritative answer (timed out, lost, garbled, a server error)
leaves all its rows unclear and is sent again as the same batch, the same
rows under the same keys, after a pause of one second, at most 3 sends in
all in one run. A batch the daemon refuses as a whole (a decided problem,
such as a daemon too old for batches) ends the import with exit 1: its
rows stay unclear in the plan for a run after the cause is fixed. Running the same import again resumes: settled rows are skipped, and
rows still unclear are sent again with their own keys, so the server replays
what it already decided and no row is ever reserved twice. The plan is
locked while an import runs: a second import of the same file exits 2 at
once.

A rerun refuses a CSV that changed since its plan was written, naming the
first row that differs, and a plan made by another actor or for another
server. To import a changed file as new reservations, give it a new name (or
move its plan away).

The summary (stdout) counts all rows of the plan: reserved, unavailable,
rejected and unclear. On stderr, import names every rejected row, every row
left unclear and every batch it sends again; a progress bar, redrawn as
each batch's answer comes in, is shown there when it is a terminal
(--progress).

Exit status:
   0  every row is settled (reserved, unavailable or rejected)
  75  some rows are still unclear: run the same import again
   2  usage error or refused (bad rows, changed CSV, another import running,
      another actor or server): nothing was sent
   1  anything else, such as a batch refused as a whole`,
		Example: `  reservectl import orders.csv
  reservectl import --parallel 8 --batch-size 500 orders.csv
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
			if batchSize < 1 || batchSize > engine.MaxBatchItems {
				return usageErrorf("--batch-size must be from 1 to %d, not %d", engine.MaxBatchItems, batchSize)
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
			return env.importCSV(cmd.Context(), args[0], parallel, batchSize, show)
		},
	}
	cmd.Flags().IntVar(&parallel, "parallel", 4, "how many batches are sent at once")
	cmd.Flags().IntVar(&batchSize, "batch-size", defaultBatchSize, fmt.Sprintf("rows per request, from 1 to %d", engine.MaxBatchItems))
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
	return fmt.Sprintf("%d rows are still unclear (their keys are in %s); run the same import again to settle them", e.n, e.plan)
}

// ExitCode makes the import exit 75.
func (e *unclearError) ExitCode() int { return ExitUnknown }

// importCSV runs or resumes the import of path.
func (env *commandEnv) importCSV(ctx context.Context, path string, parallel, batchSize int, showProgress bool) error {
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
	sent, refusal, err := env.sendRows(ctx, c, pf, plan, pending, parallel, batchSize, showProgress)
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
	if refusal != nil {
		return refusalError(refusal, c, sum.Unclear, pf.Path())
	}
	if sum.Unclear > 0 {
		return &unclearError{n: sum.Unclear, plan: pf.Path()}
	}
	return nil
}

// refusalError ends an import whose batch the daemon refused as a whole
// (the problem p, decided): sending it again would be refused again, so the
// import exits 1, not 75, and says what to fix. Its rows stay unclear in
// the plan, and a later run once the cause is fixed sends them.
func refusalError(p *engine.Error, c *client.Client, unclear int, plan string) error {
	hint := "fix the cause and run the same import again"
	if p.Code == api.CodeNotFound || p.Code == api.CodeMethodNotAllowed {
		hint = "the daemon is older than this reservectl and takes no batches (POST " + api.PathBatches + "): upgrade it, then run the same import again"
	}
	return fmt.Errorf("reserved at %s refused a batch as a whole: %v; %s still unclear in %s: %s", c.Where(), p, count(unclear, "row"), plan, hint)
}

// batchSend is the answer to one send of one batch of plan rows: the
// batch's reply, or the error of no answer at all. final says that the
// batch is not sent again in this run.
type batchSend struct {
	rows  []int
	reply client.BatchReply
	err   error
	final bool
}

// sendRows sends the pending rows of plan in batches of at most batchSize
// rows, with at most parallel batches in flight, records the rows'
// outcomes and rewrites the plan as they come in. A batch without an
// authoritative answer is sent again as the same batch, up to
// batchAttempts times. It returns how many rows it sent (each row once,
// however often its batch was sent) and the first decided refusal of a
// whole batch.
func (env *commandEnv) sendRows(ctx context.Context, c *client.Client, pf *batch.PlanFile, plan *batch.Plan, pending []int, parallel, batchSize int, showProgress bool) (sent int, refusal *engine.Error, err error) {
	if len(pending) == 0 {
		return 0, nil, nil
	}
	// At most parallel batches are in flight: each takes a slot of sem
	// before its goroutine starts. A cancelled ctx stops the sending of
	// new batches and of resends.
	results := make(chan batchSend)
	go func() {
		defer close(results)
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		defer wg.Wait()
		for rows := range slices.Chunk(pending, batchSize) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			items := make([]client.BatchItem, len(rows))
			for j, i := range rows {
				items[j] = client.BatchItem{Key: plan.Rows[i].Key, Request: plan.Rows[i].Request()}
			}
			wg.Go(func() {
				defer func() { <-sem }()
				env.sendBatch(ctx, c, rows, items, results)
			})
		}
	}()

	bar := newProgressBar(env.stderr, showProgress, plan)
	tick := time.NewTicker(planFlushEvery)
	defer tick.Stop()
	dirty := 0
	var saveErr error
	var nextSave time.Time // No rewrite before then (planFlushSpacing).
	save := func() {
		if dirty == 0 || saveErr != nil {
			return
		}
		failpoint.Hit(failpoint.ImportBeforeCheckpoint)
		start := time.Now()
		if err := pf.Save(plan); err != nil {
			saveErr = err
			return
		}
		end := time.Now()
		nextSave = end.Add(planFlushSpacing * end.Sub(start))
		dirty = 0
	}
	flush := func() {
		if time.Now().After(nextSave) {
			save()
		}
	}
	for {
		select {
		case bs, ok := <-results:
			if !ok {
				save()
				bar.done()
				if saveErr != nil {
					return sent, nil, fmt.Errorf("record outcomes: %w", saveErr)
				}
				return sent, refusal, nil
			}
			if bs.final {
				sent += len(bs.rows)
			}
			if p := env.recordBatch(plan, bs, bar); p != nil && refusal == nil {
				refusal = p
			}
			// The outcomes of one batch are recorded together: the plan
			// is rewritten between batches, never inside one.
			dirty += len(bs.rows)
			if dirty >= planFlushRows {
				flush()
			}
			bar.update()
		case <-tick.C:
			flush()
		}
	}
}

// batchAttempts bounds how often one run sends a batch that got no
// authoritative answer; batchRetryPause is the pause before each resend,
// or the answer's Retry-After when that is longer.
const (
	batchAttempts   = 3
	batchRetryPause = time.Second
)

// sendBatch sends the batch of items (the plan rows rows) and reports every
// answer to results. An undecided answer is followed by a resend of the
// same batch, the same items under the same keys, so the daemon replays
// every item it had decided; a decided one (item results, or a refusal of
// the whole batch) is final.
func (env *commandEnv) sendBatch(ctx context.Context, c *client.Client, rows []int, items []client.BatchItem, results chan<- batchSend) {
	for attempt := 1; ; attempt++ {
		cctx, cancel := env.callContext(ctx)
		reply, err := c.ReserveBatch(cctx, items, false)
		cancel()
		bs := batchSend{rows: rows, reply: reply, err: err}
		bs.final = (err == nil && reply.Decided) || attempt == batchAttempts || ctx.Err() != nil
		results <- bs
		if bs.final {
			return
		}
		t := time.NewTimer(max(batchRetryPause, reply.RetryAfter))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// recordBatch records one answer to a batch in plan and reports it, and
// returns the problem of a decided refusal of the whole batch. A row is
// settled only by its own item result in the documented answer to the
// whole batch; every other answer (none, garbled, a server error, a
// refusal of the whole batch) leaves every row of the batch unclear.
func (env *commandEnv) recordBatch(plan *batch.Plan, bs batchSend, bar *progressBar) (refusal *engine.Error) {
	why := ""
	switch r := bs.reply; {
	case bs.err != nil:
		why = describe(bs.err, 0, env.timeout)
	case r.Items != nil && !r.Refused:
	case r.Problem != nil && r.Decided:
		why = "reserved refused the whole batch: " + r.Problem.Error()
		refusal = r.Problem
	case r.Problem != nil:
		why = describe(r.Problem, r.Status, env.timeout)
	default:
		why = describe(&client.UnexpectedResponseError{Status: r.Status, ContentType: r.ContentType, Body: r.Body}, r.Status, env.timeout)
	}
	for j, i := range bs.rows {
		r := &plan.Rows[i]
		r.Attempts++
		if why != "" {
			r.LastError = why
			if bs.final {
				fmt.Fprintf(bar.out(), "line %d (%s): unclear: %s\n", r.Line, r.Row, why)
			}
			continue
		}
		o := outcomeOf(client.Reserving(r.Request()), r.Key, bs.reply.Items[j], nil, env.timeout)
		// A pending row is open, and the documented answer decides each
		// item, so settling it cannot fail.
		r.Settle(o.rowOutcome())
		r.LastError = ""
		switch status := r.Outcome.Status; {
		case status == intent.StatusRejected:
			fmt.Fprintf(bar.out(), "line %d (%s): rejected: %s: %s\n", r.Line, r.Row, r.Outcome.Code, r.Outcome.Detail)
		case engine.IsAdmissionRefusal(string(status)):
			fmt.Fprintf(bar.out(), "line %d (%s): %s\n", r.Line, r.Row, o.admissionRefusal())
		}
	}
	if why != "" && !bs.final {
		first := plan.Rows[bs.rows[0]]
		fmt.Fprintf(bar.out(), "batch of %s from line %d: unclear: %s; sending the same batch again\n", count(len(bs.rows), "row"), first.Line, why)
	}
	return refusal
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
