package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/reserve/reserve/internal/atomicfile"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/filelock"
	"github.com/reserve/reserve/internal/intent"
	"github.com/reserve/reserve/internal/safefile"
)

// PlanVersion is the version of the plan file's record. A plan of a higher
// version is refused as written by a newer reservectl. Version 2 allows
// UUIDv7 operation keys, which the plan's rows get: a reservectl of
// version 1 refuses such a plan as newer instead of calling it corrupt
// and advising to import the CSV as new intents, which would send decided
// rows again under new keys. A plan of version 1 (UUIDv4 keys only) reads
// as it is and is written as version 2 the next time it is saved.
const PlanVersion = 2

// PlanSuffix names the plan file next to its CSV: orders.csv gets
// orders.csv.plan (and the lock orders.csv.plan.lock).
const PlanSuffix = ".plan"

// maxPlanSize bounds the plan file that Load reads.
const maxPlanSize = 256 << 20

// ErrBusy means another reservectl import holds the plan's lock.
var ErrBusy = errors.New("another reservectl import is running on this plan")

// Plan is the import plan of one CSV: the server and actor its keys belong
// to, and one PlanRow per CSV row.
type Plan struct {
	Version   int       `json:"version"`
	CSV       string    `json:"csv"`
	Server    string    `json:"server"`
	Actor     string    `json:"actor"`
	CreatedAt time.Time `json:"created_at"`
	Rows      []PlanRow `json:"rows"`
}

// PlanRow is one row of the CSV with the Record of its own operation: its
// key, how often it was sent, and its authoritative outcome once there is
// one.
type PlanRow struct {
	Row
	intent.Record[Outcome]
	// LastError says why the last attempt left the row unclear.
	LastError string `json:"last_error,omitempty"`
}

// Outcome is the authoritative answer to one row: reserved (with the
// reservation id), unavailable, or rejected (with the problem's code and
// detail). Response holds the server's body of a reserved or unavailable
// answer byte for byte. A row without an outcome is unclear: never sent,
// or sent without an authoritative answer.
type Outcome struct {
	Status        intent.Status   `json:"status"`
	HTTPStatus    int             `json:"http_status"`
	ReservationID string          `json:"reservation_id,omitempty"`
	Code          string          `json:"code,omitempty"`
	Detail        string          `json:"detail,omitempty"`
	Response      json.RawMessage `json:"response,omitempty"`
}

// SameAnswer reports whether o and p record the same answer.
func (o Outcome) SameAnswer(p Outcome) bool {
	return o.Status == p.Status && o.HTTPStatus == p.HTTPStatus && o.ReservationID == p.ReservationID &&
		o.Code == p.Code && o.Detail == p.Detail && bytes.Equal(o.Response, p.Response)
}

// NewPlan gives every row a new random operation key.
func NewPlan(csvName string, rows []Row, server, actor string, now time.Time) (*Plan, error) {
	p := &Plan{Version: PlanVersion, CSV: csvName, Server: server, Actor: actor, CreatedAt: now.UTC(), Rows: make([]PlanRow, len(rows))}
	for i, r := range rows {
		key, err := intent.NewKey()
		if err != nil {
			return nil, fmt.Errorf("new plan: %w", err)
		}
		p.Rows[i] = PlanRow{Row: r, Record: intent.Record[Outcome]{Key: key}}
	}
	return p, nil
}

// Summary counts the rows of a plan by outcome; Unclear are the rows
// without an authoritative outcome (never sent, or no answer).
type Summary struct {
	Rows        int `json:"rows"`
	Reserved    int `json:"reserved"`
	Unavailable int `json:"unavailable"`
	Rejected    int `json:"rejected"`
	Unclear     int `json:"unclear"`
}

// Summary counts the plan's rows.
func (p *Plan) Summary() Summary {
	s := Summary{Rows: len(p.Rows)}
	for i := range p.Rows {
		switch o := p.Rows[i].Outcome; {
		case o == nil:
			s.Unclear++
		case o.Status == engine.StatusReserved:
			s.Reserved++
		case o.Status == engine.StatusUnavailable:
			s.Unavailable++
		default:
			s.Rejected++
		}
	}
	return s
}

// ChangedError means the CSV no longer has the rows its plan was made from.
type ChangedError struct {
	CSV, Plan string
	// Line is the CSV line where the first difference is (0 when the CSV
	// lost rows at its end: then Was names the first missing row).
	Line     int
	Was, Now string
}

// Error names the first row that differs and what to do.
func (e *ChangedError) Error() string {
	what := fmt.Sprintf("line %d is now %q but the plan has %q", e.Line, e.Now, e.Was)
	switch {
	case e.Was == "":
		what = fmt.Sprintf("line %d (%q) is not in the plan", e.Line, e.Now)
	case e.Now == "":
		what = fmt.Sprintf("the plan's row from line %d (%q) is no longer in it", e.Line, e.Was)
	}
	return fmt.Sprintf("%s changed since its plan %s was written: %s; nothing was sent (import a changed file as a new CSV, or restore it)", e.CSV, e.Plan, what)
}

// Compare checks that rows are the rows the plan was made from, in the same
// order and on the same lines, and returns a *ChangedError naming the first
// that differs.
func (p *Plan) Compare(csvPath, planPath string, rows []Row) error {
	for i := range max(len(rows), len(p.Rows)) {
		switch {
		case i >= len(p.Rows):
			return &ChangedError{CSV: csvPath, Plan: planPath, Line: rows[i].Line, Now: rows[i].String()}
		case i >= len(rows):
			return &ChangedError{CSV: csvPath, Plan: planPath, Line: p.Rows[i].Line, Was: p.Rows[i].Row.String()}
		case rows[i] != p.Rows[i].Row:
			return &ChangedError{CSV: csvPath, Plan: planPath, Line: rows[i].Line, Now: rows[i].String(), Was: p.Rows[i].Row.String()}
		}
	}
	return nil
}

// validate checks a plan read from disk.
func (p *Plan) validate() error {
	switch {
	case p.Version > PlanVersion:
		return fmt.Errorf("plan version %d is newer than this reservectl understands (%d)", p.Version, PlanVersion)
	case p.Version < 1:
		return fmt.Errorf("plan version %d is not one from 1 to %d", p.Version, PlanVersion)
	}
	if p.Server == "" || engine.ValidateActor(p.Actor) != nil {
		return errors.New("plan lacks a valid server or actor")
	}
	seen := make(map[engine.OperationKey]bool, len(p.Rows))
	for i := range p.Rows {
		r := &p.Rows[i]
		if !engine.IsOperationKey(r.Key) {
			return fmt.Errorf("row %d (line %d): invalid operation key %q", i+1, r.Line, r.Key)
		}
		if seen[r.Key] {
			return fmt.Errorf("row %d (line %d): operation key %s is used twice", i+1, r.Line, r.Key)
		}
		seen[r.Key] = true
		if err := r.Request().Validate(); err != nil {
			return fmt.Errorf("row %d (line %d): %s", i+1, r.Line, engine.ErrorMessage(err))
		}
		if o := r.Outcome; o != nil {
			// A row is a reservation: its outcome is one of the answers
			// of a reservation, or a rejection.
			if _, ok := engine.SpecOf(engine.OperationReserve, string(o.Status)); !ok && o.Status != intent.StatusRejected {
				return fmt.Errorf("row %d (line %d): unknown outcome %q", i+1, r.Line, o.Status)
			}
		}
	}
	return nil
}

// PlanFile is the open, locked plan file of one CSV. Only one PlanFile (in
// any process) can be open for a CSV at a time.
type PlanFile struct {
	path string
	lock *filelock.Lock
}

// PlanPath returns the plan file of csvPath.
func PlanPath(csvPath string) string { return csvPath + PlanSuffix }

// OpenPlan takes the exclusive lock of csvPath's plan without waiting
// (ErrBusy when another import holds it) and removes temporary files that a
// killed import left behind. A lock file that is a symbolic link, not a
// regular file, or another user's in a directory anyone can write to is
// refused (safefile.ErrRefused). The plan itself is read by Load.
func OpenPlan(csvPath string) (*PlanFile, error) {
	abs, err := filepath.Abs(PlanPath(csvPath))
	if err != nil {
		return nil, fmt.Errorf("plan of %s: %w", csvPath, err)
	}
	// No lock file is created for a plan that would be refused.
	if err := safefile.Check(abs); err != nil {
		return nil, fmt.Errorf("refusing the plan: %w", err)
	}
	lock, err := filelock.TryLock(abs + ".lock")
	if err != nil {
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("%s: %w", abs, ErrBusy)
		}
		return nil, fmt.Errorf("plan of %s: %w", csvPath, err)
	}
	if err := atomicfile.RemoveTemps(abs); err != nil {
		lock.Close()
		return nil, err
	}
	return &PlanFile{path: abs, lock: lock}, nil
}

// Path returns the plan file's absolute path.
func (f *PlanFile) Path() string { return f.path }

// Close releases the lock.
func (f *PlanFile) Close() error {
	if f.lock == nil {
		return nil
	}
	err := f.lock.Close()
	f.lock = nil
	if err != nil {
		return fmt.Errorf("close plan %s: %w", f.path, err)
	}
	return nil
}

// Load reads the plan; (nil, nil) means there is none yet. A plan that
// cannot be read or understood is an error and is left untouched, and so is
// one that is a symbolic link, not a regular file, or another user's in a
// directory anyone can write to (safefile.ErrRefused).
func (f *PlanFile) Load() (*Plan, error) {
	fh, err := safefile.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, safefile.ErrRefused) {
		return nil, fmt.Errorf("refusing the plan: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer fh.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(fh, maxPlanSize+1)); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", f.path, err)
	}
	if buf.Len() > maxPlanSize {
		return nil, fmt.Errorf("plan %s is larger than %d bytes: not a plan of reservectl (left untouched)", f.path, maxPlanSize)
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	var p Plan
	err = dec.Decode(&p)
	if err == nil && p.Version > PlanVersion {
		// Not corrupt: moving it away would send its decided rows again.
		return nil, fmt.Errorf("plan %s has version %d, newer than this reservectl understands (%d): use the reservectl that wrote it (left untouched)", f.path, p.Version, PlanVersion)
	}
	if err == nil {
		err = p.validate()
	}
	if err != nil {
		return nil, fmt.Errorf("plan %s is corrupt: %v (left untouched; move it away to import the CSV as new intents)", f.path, err)
	}
	p.Version = PlanVersion // Saved again as this version.
	return &p, nil
}

// Save writes the whole plan atomically and durably: one JSON object with
// one row per line, so that the servers' answers inside it stay byte for
// byte as they were sent and the file stays readable with grep.
func (f *PlanFile) Save(p *Plan) error {
	if f.lock == nil {
		return fmt.Errorf("save plan %s: the plan file is closed", f.path)
	}
	data, err := encodePlan(p)
	if err != nil {
		return fmt.Errorf("save plan %s: %w", f.path, err)
	}
	return atomicfile.WriteFile(f.path, data)
}

// encodePlan encodes p with one row per line.
func encodePlan(p *Plan) ([]byte, error) {
	head := *p
	head.Rows = nil
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(bytes.TrimSuffix(h, []byte(`,"rows":null}`)))
	b.WriteString(`,"rows":[`)
	for i := range p.Rows {
		row, err := json.Marshal(&p.Rows[i])
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(row)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}
