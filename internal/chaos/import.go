package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/reserve/reserve/internal/batch"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/engine/memstore"
	"github.com/reserve/reserve/internal/failpoint"
)

// importTimeout bounds how long the interrupted import may take to
// settle every row.
const importTimeout = 3 * time.Minute

// importWorkshops are the workshops only the import reserves in. Their
// capacities are exactly the places the rows ask for, so every row of an
// import that does each row once is reserved, and a row reserved twice
// leaves a later row unavailable.
var importWorkshops = []string{"imp-0", "imp-1"}

// runImport runs `reservectl import` of a CSV of the configured size
// against the first daemon, killing reservectl now and then with SIGKILL
// or at its failpoint between a batch's answers and the plan's rewrite,
// and runs it again until every row is settled. The rows' outcomes are
// then compared with those of an uninterrupted import into a reference
// engine (engine.Engine on memstore, one row after the other as
// --parallel 1 sends them), and every row joins the history.
func (r *run) runImport(ctx context.Context, token string) {
	dir := filepath.Join(r.dir, "import")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.fail(err)
		return
	}
	rng := newRand(r.cfg.Seed, 900)
	rows := make([]engine.Request, r.cfg.Size.ImportRows)
	want := map[string]int{}
	var csv strings.Builder
	csv.WriteString("workshop,quantity\n")
	for i := range rows {
		rows[i] = engine.Request{Workshop: importWorkshops[rng.IntN(len(importWorkshops))], Quantity: 1 + rng.IntN(r.maxQuantity)}
		want[rows[i].Workshop] += rows[i].Quantity
		fmt.Fprintf(&csv, "%s,%d\n", rows[i].Workshop, rows[i].Quantity)
	}
	admin := &client.Client{Socket: r.slots[0].socket}
	for _, w := range importWorkshops {
		// The daemons are already being killed: the PUT, which sets the
		// same workshop however often it is sent, is sent until it is
		// answered.
		spec := importSpec(want[w], r.maxQuantity)
		if err := untilAnswered(func() error { _, _, err := admin.PutWorkshop(ctx, w, spec, nil); return err }); err != nil {
			r.fail(fmt.Errorf("create workshop %s: %w", w, err))
			return
		}
		r.mu.Lock()
		r.capacity[w] = max(want[w], 1)
		r.mu.Unlock()
	}
	path := filepath.Join(dir, "rows.csv")
	if err := os.WriteFile(path, []byte(csv.String()), 0o600); err != nil {
		r.fail(err)
		return
	}
	call := r.h.Now()
	url := "http://" + r.slots[0].addr
	if rng.IntN(2) == 0 {
		url = "http://" + r.proxies[0].addr
	}
	env := cliEnv(dir, url, token)
	batchSize := fmt.Sprint(1 + rng.IntN(max(r.cfg.Size.ImportBatch, 1)))
	deadline := time.Now().Add(importTimeout)
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) {
			r.fail(fmt.Errorf("the import did not settle every row within %v", importTimeout))
			return
		}
		cmdEnv := env
		armed := rng.IntN(3) == 0
		if armed {
			cmdEnv = append(append([]string(nil), env...), fmt.Sprintf("GOFAIL_FAILPOINTS=%s=%d*off->return(\"kill\")", failpoint.ImportBeforeCheckpoint, 1+rng.IntN(4)))
		}
		cmd := exec.Command(r.cfg.Bin.Reservectl, "--json", "--timeout", "3s", "import", "--parallel", "1", "--batch-size", batchSize, "--progress", "never", path)
		cmd.Env = cmdEnv
		var out logBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			r.fail(err)
			return
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var kill <-chan time.Time
		if rng.IntN(3) == 0 {
			kill = time.After(time.Duration(5+rng.IntN(300)) * time.Millisecond)
		}
		select {
		case <-done:
		case <-kill:
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
		st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case st.Signaled() && strings.Contains(out.String(), "failpoint kill: "+failpoint.ImportBeforeCheckpoint):
			r.count(r.crashes, "reservectl_"+failpoint.ImportBeforeCheckpoint)
			continue
		case st.Signaled():
			r.count(r.faults, "import_sigkill")
			continue
		case cmd.ProcessState.ExitCode() == exitUnknown:
			time.Sleep(50 * time.Millisecond)
			continue
		case cmd.ProcessState.ExitCode() != 0:
			r.fail(fmt.Errorf("reservectl import exited %d:\n%s", cmd.ProcessState.ExitCode(), tail(out.String())))
			return
		}
		break
	}
	ret := r.h.Now()
	pf, err := batch.OpenPlan(path)
	if err != nil {
		r.fail(fmt.Errorf("open the import's plan: %w", err))
		return
	}
	plan, err := pf.Load()
	pf.Close()
	if err != nil {
		r.fail(fmt.Errorf("read the import's plan: %w", err))
		return
	}
	ref := engine.New(memstore.New(memstore.Options{}))
	for _, w := range importWorkshops {
		if _, _, err := ref.PutWorkshop(ctx, w, importSpec(want[w], r.maxQuantity), nil); err != nil {
			r.fail(err)
			return
		}
	}
	var got, wantOutcomes []string
	for i, row := range plan.Rows {
		out, err := ref.Reserve(ctx, plan.Actor, row.Key, rows[i])
		if err != nil {
			wantOutcomes = append(wantOutcomes, engine.OutcomeRejected)
		} else {
			wantOutcomes = append(wantOutcomes, out.Answer.Status)
		}
		if row.Outcome == nil {
			got = append(got, engine.OutcomeUnknown)
			continue
		}
		got = append(got, string(row.Outcome.Status))
		op := &Op{Client: 3000, Actor: plan.Actor, Role: Intent, Kind: engine.OperationReserve, Key: row.Key, Workshop: row.Workshop, Quantity: row.Quantity,
			Via: "import", Call: call, Return: ret, Status: row.Outcome.HTTPStatus, Body: row.Outcome.Response, Code: row.Outcome.Code}
		r.h.Add(op)
	}
	r.importGot, r.importWant = got, wantOutcomes
}

func decodeJSON(data []byte, v any) error { return json.Unmarshal(data, v) }

// untilAnswered calls call, an admin request that may be sent more than
// once (setting a workshop, creating a token), until it is answered: a
// daemon being killed or a store restarting answers it with no decision
// (client.Undecided), and the run goes on sending it for up to
// intentTimeout.
func untilAnswered(call func() error) error {
	deadline := time.Now().Add(intentTimeout)
	for {
		err := call()
		if err == nil || !client.Undecided(0, err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// importSpec is an import workshop that takes exactly the want places of
// its rows: a row asks for at most maxQuantity places and never more than
// want, and a workshop's max_quantity may not be above its capacity.
func importSpec(want, maxQuantity int) engine.WorkshopSpec {
	capacity := max(want, 1)
	return engine.WorkshopSpec{Capacity: capacity, MaxQuantity: min(maxQuantity, capacity)}
}
