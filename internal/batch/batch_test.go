package batch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/batch"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/safefile"
)

func parse(t *testing.T, csv string) ([]batch.Row, error) {
	t.Helper()
	return batch.ParseCSV("orders.csv", strings.NewReader(csv))
}

func TestParseCSVHeaderAndColumns(t *testing.T) {
	for name, tc := range map[string]struct {
		csv  string
		want []batch.Row
	}{
		"header": {"workshop,quantity,ref\nw-a,2,o-1\nw-b,1,o-2\n",
			[]batch.Row{{Line: 2, Workshop: "w-a", Quantity: 2, Ref: "o-1"}, {Line: 3, Workshop: "w-b", Quantity: 1, Ref: "o-2"}}},
		"no header, ref optional": {"w-a,2\nw-b,1,o-2\n",
			[]batch.Row{{Line: 1, Workshop: "w-a", Quantity: 2}, {Line: 2, Workshop: "w-b", Quantity: 1, Ref: "o-2"}}},
		"reordered header, spaces, blank lines": {" Ref , QUANTITY,workshop\n\no-1, 3 ,w-a\n",
			[]batch.Row{{Line: 3, Workshop: "w-a", Quantity: 3, Ref: "o-1"}}},
		"header without ref": {"quantity,workshop\n1,w-a\n",
			[]batch.Row{{Line: 2, Workshop: "w-a", Quantity: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parse(t, tc.csv)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("row %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseCSVReportsEveryBadRowWithItsLine(t *testing.T) {
	_, err := parse(t, "workshop,quantity,ref\nw-a,1\nw-a,0\nW A,1\nw-a,1.5\nw-a\nw-a,1,r,extra\nw-a,2,ok\n")
	var bad *batch.BadRowsError
	if !errors.As(err, &bad) {
		t.Fatalf("err = %v, want *BadRowsError", err)
	}
	var lines []int
	for _, r := range bad.Rows {
		lines = append(lines, r.Line)
	}
	if want := []int{3, 4, 5, 6, 7}; !equalInts(lines, want) {
		t.Errorf("bad lines %v, want %v (%v)", lines, want, err)
	}
	for _, s := range []string{"line 3: member \"quantity\"", "line 5: quantity \"1.5\" is not a whole number", "line 6: has 1 columns, want 2 to 3", "nothing was sent"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
}

func TestParseCSVRefusesBadHeadersAndEmptyFiles(t *testing.T) {
	for csv, want := range map[string]string{
		"workshop,qty\nw-a,1\n":              `line 1: header column 2 is "qty"`,
		"workshop,quantity,workshop\nw-a,1,": `names column "workshop" twice`,
		"workshop,ref\nw-a,x\n":              `lacks the column "quantity"`,
		"workshop,quantity\n":                "no rows to import",
		"w-a,\"1\n":                          "line 1: not valid CSV",
	} {
		_, err := parse(t, csv)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to contain %q", csv, err, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustPlan(t *testing.T, rows []batch.Row) *batch.Plan {
	t.Helper()
	p, err := batch.NewPlan("orders.csv", rows, "unix:/tmp/x.sock", "alice", time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanRoundTripKeepsAnswersByteForByte(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "orders.csv")
	rows := []batch.Row{{Line: 1, Workshop: "w-a", Quantity: 1}, {Line: 2, Workshop: "w-b", Quantity: 2, Ref: "x"}}
	p := mustPlan(t, rows)
	if p.Rows[0].Key == p.Rows[1].Key {
		t.Fatal("two rows share a key")
	}
	body := []byte(`{"status":"reserved","reservation_id":"01a229c31484d6ca5401612f538c1b19","workshop":"w-a","quantity":1}`)
	p.Rows[0].Outcome = &batch.Outcome{Status: engine.StatusReserved, HTTPStatus: 201, ReservationID: "01a229c31484d6ca5401612f538c1b19", Response: body}
	f, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(batch.PlanPath(csv))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, body) {
		t.Errorf("the plan does not hold the answer byte for byte:\n%s", data)
	}
	if n := bytes.Count(data, []byte("\n")); n != 4 {
		t.Errorf("plan has %d lines, want one per row plus two:\n%s", n, data)
	}
	got, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Compare(csv, f.Path(), rows); err != nil {
		t.Fatal(err)
	}
	if got.Rows[1].Key != p.Rows[1].Key || !bytes.Equal(got.Rows[0].Outcome.Response, body) {
		t.Errorf("loaded %+v, want %+v", got.Rows, p.Rows)
	}
	if s := got.Summary(); s != (batch.Summary{Rows: 2, Reserved: 1, Unclear: 1}) {
		t.Errorf("summary %+v", s)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("directory holds %d files, want the plan and its lock only (no temporaries)", len(entries))
	}
}

func TestPlanCompareNamesTheFirstChangedRow(t *testing.T) {
	rows := []batch.Row{{Line: 2, Workshop: "w-a", Quantity: 1}, {Line: 3, Workshop: "w-b", Quantity: 2}}
	p := mustPlan(t, rows)
	changed := []batch.Row{rows[0], {Line: 3, Workshop: "w-b", Quantity: 3}}
	err := p.Compare("orders.csv", "orders.csv.plan", changed)
	var ce *batch.ChangedError
	if !errors.As(err, &ce) || ce.Line != 3 || !strings.Contains(err.Error(), `line 3 is now "w-b,3" but the plan has "w-b,2"`) {
		t.Errorf("err = %v", err)
	}
	if err := p.Compare("orders.csv", "orders.csv.plan", rows[:1]); err == nil || !strings.Contains(err.Error(), `line 3 ("w-b,2") is no longer in it`) {
		t.Errorf("shorter CSV: err = %v", err)
	}
	more := append(append([]batch.Row{}, rows...), batch.Row{Line: 4, Workshop: "w-c", Quantity: 1})
	if err := p.Compare("orders.csv", "orders.csv.plan", more); err == nil || !strings.Contains(err.Error(), `line 4 ("w-c,1") is not in the plan`) {
		t.Errorf("longer CSV: err = %v", err)
	}
}

func TestPlanIsLockedAndACorruptPlanIsLeftUntouched(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "orders.csv")
	f, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := batch.OpenPlan(csv); !errors.Is(err, batch.ErrBusy) {
		t.Fatalf("second OpenPlan: err = %v, want ErrBusy", err)
	}
	corrupt := []byte(`{"version":1,"rows":[`)
	if err := os.WriteFile(f.Path(), corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Errorf("Load of a corrupt plan: err = %v", err)
	}
	if data, _ := os.ReadFile(f.Path()); !bytes.Equal(data, corrupt) {
		t.Error("the corrupt plan was changed")
	}
	f.Close()
	g, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatalf("OpenPlan after Close: %v", err)
	}
	g.Close()
}

// TestPlanFilesAreOpenedSafely: a symbolic link as the plan's lock file is
// not followed (its target is not created), and a named pipe as the plan is
// refused at once instead of blocking the import.
func TestPlanFilesAreOpenedSafely(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "orders.csv")
	victim := filepath.Join(dir, "victim")
	if err := os.Symlink(victim, batch.PlanPath(csv)+".lock"); err != nil {
		t.Fatal(err)
	}
	if _, err := batch.OpenPlan(csv); !errors.Is(err, safefile.ErrRefused) || !strings.Contains(err.Error(), "is a symbolic link, not a regular file") {
		t.Errorf("OpenPlan with a symbolic link as the lock file: err = %v", err)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}

	csv = filepath.Join(dir, "other.csv")
	if err := syscall.Mkfifo(batch.PlanPath(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	// It is refused before its lock file is created.
	if _, err := batch.OpenPlan(csv); !errors.Is(err, safefile.ErrRefused) || !strings.Contains(err.Error(), "is a named pipe (FIFO), not a regular file") {
		t.Errorf("OpenPlan of a named pipe: err = %v", err)
	}
	if _, err := os.Lstat(batch.PlanPath(csv) + ".lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was created next to the refused plan: %v", err)
	}
}

// TestPlanKeepsAdmissionRefusals: rows refused by a workshop's
// registration window or limit per person are settled with those answers,
// and a plan holding them loads again (an import resumes over it).
func TestPlanKeepsAdmissionRefusals(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "orders.csv")
	rows := []batch.Row{{Line: 1, Workshop: "w-a", Quantity: 1}, {Line: 2, Workshop: "w-b", Quantity: 1}, {Line: 3, Workshop: "w-c", Quantity: 2}}
	p := mustPlan(t, rows)
	for i, a := range []string{
		`{"status":"registration_not_open","workshop":"w-a","quantity":1}`,
		`{"status":"registration_closed","workshop":"w-b","quantity":1}`,
		`{"status":"limit_reached","workshop":"w-c","quantity":2,"max_per_person":2,"already":1}`,
	} {
		var answer struct{ Status string }
		if err := json.Unmarshal([]byte(a), &answer); err != nil {
			t.Fatal(err)
		}
		p.Rows[i].Outcome = &batch.Outcome{Status: intent.Status(answer.Status), HTTPStatus: 409, Response: []byte(a)}
	}
	f, err := batch.OpenPlan(csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	got, err := f.Load()
	if err != nil {
		t.Fatalf("load a plan with refusals by the registration window and the limit: %v", err)
	}
	if s := got.Summary(); s != (batch.Summary{Rows: 3, Rejected: 3}) {
		t.Errorf("summary %+v, want 3 rejected", s)
	}
}
