// Package batch is the data side of reservectl's resumable batch import: it
// reads the CSV of reservations to make, and keeps the import's plan file
// next to it, which gives every row its own stable operation key before
// anything is sent and records each row's authoritative outcome, so that an
// interrupted import resumes without a second effect for any row.
//
// The plan is written atomically (package atomicfile), guarded by an
// exclusive flock on <plan>.lock (package filelock), and read and locked by
// package safefile's rules. This package knows nothing about
// transport: it must not import net/http, the client, cobra or the server.
package batch

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/reserve/reserve/internal/engine"
)

// MaxRows bounds the rows of one import; a larger CSV is refused. The plan
// is rewritten as a whole, so it must stay small enough to write often.
const MaxRows = 100_000

// maxRefBytes bounds the optional ref column.
const maxRefBytes = 200

// The column names of the CSV.
const (
	ColumnWorkshop = "workshop"
	ColumnQuantity = "quantity"
	ColumnRef      = "ref"
)

// Row is one reservation to make: the line of the CSV it came from, the
// payload, and the operator's own reference (optional, never sent).
type Row struct {
	Line     int    `json:"line"`
	Workshop string `json:"workshop"`
	Quantity int    `json:"quantity"`
	Ref      string `json:"ref,omitempty"`
}

// Request returns the payload the row sends.
func (r Row) Request() engine.Request {
	return engine.Request{Workshop: r.Workshop, Quantity: r.Quantity}
}

// String shows the row as its CSV columns.
func (r Row) String() string {
	s := fmt.Sprintf("%s,%d", r.Workshop, r.Quantity)
	if r.Ref != "" {
		s += "," + r.Ref
	}
	return s
}

// RowError is one bad row: its line and what is wrong with it.
type RowError struct {
	Line int
	Err  error
}

// Error names the line.
func (e RowError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// BadRowsError lists every bad row of a CSV. An import with bad rows sends
// nothing and writes no plan.
type BadRowsError struct {
	Path string
	Rows []RowError
}

// maxListed bounds how many bad rows the error message lists.
const maxListed = 20

// Error lists the bad rows, one per line, at most maxListed of them.
func (e *BadRowsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s has %d bad rows; nothing was sent and no plan was written:", e.Path, len(e.Rows))
	for i, r := range e.Rows {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Rows)-maxListed)
			break
		}
		b.WriteString("\n  " + r.Error())
	}
	return b.String()
}

// ParseCSV reads the rows of an import from r; path names it in errors.
//
// The columns are workshop, quantity and an optional ref. The first record
// is a header when one of its fields is "workshop" or "quantity" (any case,
// surrounding spaces ignored); a header gives the columns' order and must
// name workshop and quantity once each and nothing but them and ref. Without
// a header the columns are workshop,quantity[,ref] in that order. Blank
// lines are skipped. Every row is checked with the server's request contract
// (workshop id, quantity ≥ 1) and all bad rows are returned together in a
// *BadRowsError; a CSV that cannot be parsed at all is an error naming its
// line.
func ParseCSV(path string, r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	cols := map[string]int{ColumnWorkshop: 0, ColumnQuantity: 1, ColumnRef: 2}
	width := 3
	var rows []Row
	bad := &BadRowsError{Path: path}
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s: line %d: not valid CSV: %v", path, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if isHeader(rec) {
				if cols, err = headerColumns(rec); err != nil {
					return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
				}
				width = len(rec)
				continue
			}
		}
		if len(rows)+len(bad.Rows) >= MaxRows {
			return nil, fmt.Errorf("%s: more than %d rows; split it into several imports", path, MaxRows)
		}
		row, err := parseRow(rec, cols, width, line)
		if err != nil {
			bad.Rows = append(bad.Rows, RowError{Line: line, Err: err})
			continue
		}
		rows = append(rows, row)
	}
	if len(bad.Rows) > 0 {
		return nil, bad
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s has no rows to import", path)
	}
	return rows, nil
}

// isHeader reports whether a first record names columns.
func isHeader(rec []string) bool {
	for _, f := range rec {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case ColumnWorkshop, ColumnQuantity:
			return true
		}
	}
	return false
}

// headerColumns maps the column names of a header to their positions.
func headerColumns(rec []string) (map[string]int, error) {
	cols := map[string]int{}
	for i, f := range rec {
		name := strings.ToLower(strings.TrimSpace(f))
		switch name {
		case ColumnWorkshop, ColumnQuantity, ColumnRef:
		default:
			return nil, fmt.Errorf("header column %d is %q; the columns are workshop, quantity and an optional ref", i+1, f)
		}
		if _, dup := cols[name]; dup {
			return nil, fmt.Errorf("header names column %q twice", name)
		}
		cols[name] = i
	}
	for _, need := range []string{ColumnWorkshop, ColumnQuantity} {
		if _, ok := cols[need]; !ok {
			return nil, fmt.Errorf("header lacks the column %q", need)
		}
	}
	return cols, nil
}

// parseRow checks one data record against the columns.
func parseRow(rec []string, cols map[string]int, width, line int) (Row, error) {
	least := max(cols[ColumnWorkshop], cols[ColumnQuantity]) + 1
	if len(rec) < least || len(rec) > width {
		return Row{}, fmt.Errorf("has %d columns, want %s", len(rec), columnCount(least, width))
	}
	field := func(name string) string {
		i, ok := cols[name]
		if !ok || i >= len(rec) {
			return ""
		}
		return strings.TrimSpace(rec[i])
	}
	row := Row{Line: line, Workshop: field(ColumnWorkshop), Ref: field(ColumnRef)}
	q := field(ColumnQuantity)
	n, err := strconv.Atoi(q)
	if err != nil {
		return Row{}, fmt.Errorf("quantity %q is not a whole number", q)
	}
	row.Quantity = n
	if err := row.Request().Validate(); err != nil {
		return Row{}, errors.New(engine.ErrorMessage(err))
	}
	if err := validateRef(row.Ref); err != nil {
		return Row{}, err
	}
	return row, nil
}

// columnCount says how many columns a row may have.
func columnCount(least, most int) string {
	if least == most {
		return strconv.Itoa(most)
	}
	return fmt.Sprintf("%d to %d", least, most)
}

// validateRef checks the optional ref column: printable text of at most
// maxRefBytes bytes.
func validateRef(ref string) error {
	if len(ref) > maxRefBytes {
		return fmt.Errorf("ref is longer than %d bytes", maxRefBytes)
	}
	for _, r := range ref {
		if r < 0x20 || r == 0x7f {
			return errors.New("ref contains a control character")
		}
	}
	return nil
}
