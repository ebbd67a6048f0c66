// Command bareprobe is the floor against which reserved's throughput of
// single reservations is compared: a bare HTTP server with bbolt group
// commit that does the least a durable reservation over HTTP can do. Each
// reservation is one read of its receipt and, when there is none, one
// read of its workshop's counter, one comparison with a fixed capacity and
// one write of the receipt (the answer's body under the caller's token and
// Idempotency-Key), with the counter written back in the same
// transaction; the answer is sent once the transaction is synced to disk.
// A repeated key of the same token is answered with the stored body,
// marked as a replay.
//
// It speaks exactly as much of reserve's HTTP API as `reservectl bench
// --server … --token … --workshop …` uses, with single reservations and
// with --batch: POST /api/v1/reservations, POST /api/v1/batches and GET
// /api/v1/workshops/{id}, which the bench reads before and after its run
// to verify its count. Running the bench against it and against reserved
// on the same machine shows what reserved spends beyond this floor.
//
// What it leaves out, compared with reserved: the engine and its checks
// (workshops to create, schedules, limits per person, holds, waiting
// lists, fingerprints that tell a reused key with another request from a
// repeat, key expiry), the reservation records and their indexes, events,
// webhooks and mail, token lookup (any bearer token is accepted, and only
// names whose receipts a key belongs to), the strict request contract
// (bodies are read with encoding/json, unknown members ignored), rate and
// connection limits, metrics and logging. Every workshop id exists, with
// the capacity of --capacity and nothing reserved until something is.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

const usage = `bareprobe is a bare HTTP server with bbolt group commit that answers
reservectl bench as reserved would, doing the least a durable reservation
can do: the floor to compare reserved's throughput with.

Usage:
  bareprobe --db PATH [--listen 127.0.0.1:18190] [--commit loop|batch] [--batch-delay D] [--capacity N]

Then, against it (any token, any workshop id):
  reservectl --server http://127.0.0.1:18190 --token x bench --workshop probe --clients 64 --duration 10s
  reservectl --server http://127.0.0.1:18190 --token x bench --workshop probe --clients 8 --batch 100 --duration 10s

Flags:
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bareprobe:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bareprobe", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:18190", "TCP address to listen on")
	path := fs.String("db", "", "bbolt file to keep receipts and counters in (created if missing)")
	var opts options
	fs.StringVar(&opts.commit, "commit", commitLoop, `group commit: "loop" (a committer that takes every waiting call) or "batch" (bbolt's db.Batch)`)
	fs.DurationVar(&opts.batchDelay, "batch-delay", 10*time.Millisecond, "db.MaxBatchDelay with --commit batch (bbolt's own default)")
	fs.IntVar(&opts.capacity, "capacity", 1_000_000_000, "places of every workshop")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("--db is required and no arguments are taken")
	}
	p, err := open(*path, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Fprintf(os.Stderr, "bareprobe: listening on http://%s, %s commit, database %s\n", ln.Addr(), opts.commit, *path)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Group commit modes.
const (
	commitLoop  = "loop"
	commitBatch = "batch"
)

// maxCommitItems bounds the reservations one commit of the loop takes, as
// internal/boltstore bounds its own.
const maxCommitItems = 10_000

type options struct {
	commit     string
	batchDelay time.Duration
	capacity   int
}

var (
	bucketReceipts  = []byte("receipts")
	bucketWorkshops = []byte("workshops")
)

// probe is the server: its database, how it commits, and where its
// reservation ids come from.
type probe struct {
	db       *bolt.DB
	capacity uint64
	// decide runs items in one durable transaction (the loop's or
	// db.Batch's, shared with other requests) and fills in their answers.
	decide func([]*item) error
	calls  chan call     // The loop's queue; nil with db.Batch.
	done   chan struct{} // Closed when the loop has ended.
	// idPrefix and seq make reservation ids: 8 random bytes drawn at
	// start and a counter, unique without a lock or a read of the clock.
	idPrefix [8]byte
	seq      atomic.Uint64
}

// item is one reservation: what was asked, then what was answered.
type item struct {
	receipt  []byte // The token, a zero byte and the Idempotency-Key.
	workshop string
	quantity int
	body     []byte
	replayed bool
}

// call is one request's items waiting for the loop's commit.
type call struct {
	items []*item
	err   chan error
}

// open opens (or creates) the database at path and starts the committer.
//
// The file is opened as internal/boltstore opens reserved's: every commit
// is synced (bbolt's default), and the freelist is not written with each
// commit but rebuilt when the file is opened (NoFreelistSync, in a map),
// which costs no durability and spares the probe a write reserved does not
// make either.
func open(path string, opts options) (*probe, error) {
	if opts.commit != commitLoop && opts.commit != commitBatch {
		return nil, fmt.Errorf("--commit must be %q or %q, not %q", commitLoop, commitBatch, opts.commit)
	}
	if opts.capacity < 1 {
		return nil, fmt.Errorf("--capacity must be at least 1, not %d", opts.capacity)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketReceipts, bucketWorkshops} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create buckets in %s: %w", path, err)
	}
	p := &probe{db: db, capacity: uint64(opts.capacity)}
	rand.Read(p.idPrefix[:])
	if opts.commit == commitBatch {
		// db.Batch holds a batch open for MaxBatchDelay (or until
		// MaxBatchSize calls wait), and a batch whose delay has passed
		// takes no more calls while it waits for the commit before it,
		// so its commits follow the delay rather than the load: with
		// bbolt's 10 ms every request waits about 10 ms before its
		// commit even starts, and a smaller delay makes smaller batches
		// that queue for the writer one after another. The loop has
		// neither cost, which is why it is the default; db.Batch is
		// here to compare with.
		db.MaxBatchDelay = opts.batchDelay
		p.decide = func(items []*item) error {
			return db.Batch(func(tx *bolt.Tx) error { return decideIn(tx, p, items) })
		}
		return p, nil
	}
	// The loop commits as internal/boltstore's committer does, without
	// any added delay: it takes every call waiting at the moment, runs
	// them in one transaction and answers them after the sync, while new
	// calls queue up for the next commit; so a commit grows with the load.
	p.calls = make(chan call, 1024)
	p.done = make(chan struct{})
	go p.loop()
	p.decide = func(items []*item) error {
		c := call{items: items, err: make(chan error, 1)}
		p.calls <- c
		return <-c.err
	}
	return p, nil
}

// Close ends the loop and closes the database; no request may be served
// any more.
func (p *probe) Close() error {
	if p.calls != nil {
		close(p.calls)
		<-p.done
	}
	return p.db.Close()
}

// loop is the group committer of --commit loop. A failed transaction fails
// every call of its commit (a failing Put means a failing disk here, not a
// refused request).
func (p *probe) loop() {
	defer close(p.done)
	var batch []call
	var items []*item
	for c := range p.calls {
		batch, items = append(batch[:0], c), append(items[:0], c.items...)
	fill:
		for len(items) < maxCommitItems {
			select {
			case c, ok := <-p.calls:
				if !ok {
					break fill
				}
				batch, items = append(batch, c), append(items, c.items...)
			default:
				break fill
			}
		}
		err := p.db.Update(func(tx *bolt.Tx) error { return decideIn(tx, p, items) })
		for _, c := range batch {
			c.err <- err
		}
		clear(items) // Lets the answered items go.
	}
}

// decideIn answers items in tx: a receipt's stored body if the key has
// one, else "reserved" while the workshop has room and "unavailable" once
// it has not, stored as the key's receipt. The counters are read once and
// written once per transaction.
func decideIn(tx *bolt.Tx, p *probe, items []*item) error {
	receipts, workshops := tx.Bucket(bucketReceipts), tx.Bucket(bucketWorkshops)
	counts := map[string]uint64{}
	for _, it := range items {
		if body := receipts.Get(it.receipt); body != nil {
			it.body, it.replayed = bytes.Clone(body), true
			continue
		}
		n, ok := counts[it.workshop]
		if !ok {
			n = counter(workshops.Get([]byte(it.workshop)))
		}
		q := uint64(it.quantity)
		if n+q <= p.capacity {
			counts[it.workshop] = n + q
			it.body = p.answer(engine.StatusReserved, it)
		} else {
			counts[it.workshop] = n
			it.body = p.answer(engine.StatusUnavailable, it)
		}
		it.replayed = false
		if err := receipts.Put(it.receipt, it.body); err != nil {
			return err
		}
	}
	for w, n := range counts {
		if err := workshops.Put([]byte(w), binary.BigEndian.AppendUint64(nil, n)); err != nil {
			return err
		}
	}
	return nil
}

// counter decodes a stored counter; none is 0.
func counter(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// answer encodes the answer with status to it, as reserved encodes it: a
// reserved answer has a new reservation id.
func (p *probe) answer(status string, it *item) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"status":"`...)
	b = append(b, status...)
	b = append(b, '"')
	if status == engine.StatusReserved {
		var id [16]byte
		copy(id[:8], p.idPrefix[:])
		binary.BigEndian.PutUint64(id[8:], p.seq.Add(1))
		b = append(b, `,"reservation_id":"`...)
		b = hex.AppendEncode(b, id[:])
		b = append(b, '"')
	}
	b = append(b, `,"workshop":`...)
	b = appendString(b, it.workshop)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, int64(it.quantity), 10)
	return append(b, '}')
}

// httpStatus is the HTTP status of a stored body, as reserved sends it: 201
// for a reservation made, 409 for a refusal.
func httpStatus(body []byte) int {
	if bytes.HasPrefix(body, []byte(`{"status":"`+engine.StatusReserved+`"`)) {
		return http.StatusCreated
	}
	return http.StatusConflict
}

// appendString appends s as a JSON string. s came out of encoding/json, so
// it is valid UTF-8; only quotes, backslashes and control characters need
// escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// ServeHTTP routes the three requests the bench makes.
func (p *probe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		problem(w, http.StatusUnauthorized, engine.CodeUnauthenticated, "a bearer token is required (any will do)")
		return
	}
	switch {
	case r.URL.Path == api.PathReservations && r.Method == http.MethodPost:
		p.reserve(w, r, token)
	case r.URL.Path == api.PathBatches && r.Method == http.MethodPost:
		p.batch(w, r, token)
	case strings.HasPrefix(r.URL.Path, api.PathWorkshops+"/") && r.Method == http.MethodGet:
		p.workshop(w, strings.TrimPrefix(r.URL.Path, api.PathWorkshops+"/"))
	default:
		problem(w, http.StatusNotFound, api.CodeNotFound, "the probe answers only what reservectl bench asks")
	}
}

// reserve answers POST /api/v1/reservations.
func (p *probe) reserve(w http.ResponseWriter, r *http.Request, token string) {
	key := r.Header.Get(api.HeaderIdempotencyKey)
	if key == "" || len(key) > 255 {
		problem(w, http.StatusBadRequest, api.CodeMissingIdempotencyKey, "an Idempotency-Key of 1 to 255 bytes is required")
		return
	}
	var req engine.Request
	if !readJSON(w, r, api.MaxBodyBytes, &req) {
		return
	}
	it, ok := newItem(w, token, key, req.Workshop, req.Quantity)
	if !ok {
		return
	}
	if err := p.decide([]*item{it}); err != nil {
		problem(w, http.StatusInternalServerError, engine.CodeInternal, err.Error())
		return
	}
	h := w.Header()
	h["Content-Type"] = []string{api.MediaJSON}
	h["Content-Length"] = []string{strconv.Itoa(len(it.body))}
	if it.replayed {
		h[api.HeaderReplayed] = []string{"true"}
	}
	w.WriteHeader(httpStatus(it.body))
	w.Write(it.body)
}

// batch answers POST /api/v1/batches, item by item. Every item is decided
// on its own, so an atomic batch is answered as a non-atomic one: with
// capacity to spare, the two answer alike.
func (p *probe) batch(w http.ResponseWriter, r *http.Request, token string) {
	var req struct {
		Items []struct {
			Key      string `json:"key"`
			Workshop string `json:"workshop"`
			Quantity int    `json:"quantity"`
		} `json:"items"`
	}
	if !readJSON(w, r, api.MaxBatchBytes, &req) {
		return
	}
	if len(req.Items) == 0 || len(req.Items) > engine.MaxBatchItems {
		problem(w, http.StatusBadRequest, engine.CodeRequestContract, fmt.Sprintf("a batch has 1 to %d items", engine.MaxBatchItems))
		return
	}
	items := make([]*item, len(req.Items))
	for i, in := range req.Items {
		if in.Key == "" || len(in.Key) > 255 {
			problem(w, http.StatusBadRequest, engine.CodeRequestContract, "every item needs a key of 1 to 255 bytes")
			return
		}
		var ok bool
		if items[i], ok = newItem(w, token, in.Key, in.Workshop, in.Quantity); !ok {
			return
		}
	}
	if err := p.decide(items); err != nil {
		problem(w, http.StatusInternalServerError, engine.CodeInternal, err.Error())
		return
	}
	b := make([]byte, 0, 16+len(items)*200)
	b = append(b, `{"results":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendString(b, req.Items[i].Key)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(httpStatus(it.body)), 10)
		b = append(b, `,"replayed":`...)
		b = strconv.AppendBool(b, it.replayed)
		b = append(b, `,"body":`...)
		b = append(b, it.body...)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	h := w.Header()
	h["Content-Type"] = []string{api.MediaJSON}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// newItem checks one reservation and returns it; a refusal is answered.
func newItem(w http.ResponseWriter, token, key, workshop string, quantity int) (*item, bool) {
	if workshop == "" || quantity < 1 || quantity > engine.MaxQuantity {
		problem(w, http.StatusBadRequest, engine.CodeRequestContract, fmt.Sprintf("a reservation needs a workshop and a quantity of 1 to %d", engine.MaxQuantity))
		return nil, false
	}
	receipt := make([]byte, 0, len(token)+1+len(key))
	receipt = append(append(append(receipt, token...), 0), key...)
	return &item{receipt: receipt, workshop: workshop, quantity: quantity}, true
}

// readJSON decodes the request's body of at most limit bytes into v; a
// refusal is answered.
func readJSON(w http.ResponseWriter, r *http.Request, limit int, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	switch {
	case err != nil:
		problem(w, http.StatusBadRequest, api.CodeBodyIncomplete, err.Error())
	case len(data) > limit:
		problem(w, http.StatusRequestEntityTooLarge, api.CodeBodyTooLarge, fmt.Sprintf("the body is larger than %d bytes", limit))
	case json.Unmarshal(data, v) != nil:
		problem(w, http.StatusBadRequest, engine.CodeRequestContract, "the body is not the JSON object asked for")
	default:
		return true
	}
	return false
}

// workshop answers GET /api/v1/workshops/{id}: every id is a workshop of
// the probe's capacity, with its counter as reserved.
func (p *probe) workshop(w http.ResponseWriter, id string) {
	if id == "" || strings.Contains(id, "/") {
		problem(w, http.StatusNotFound, api.CodeNotFound, "the probe answers only what reservectl bench asks")
		return
	}
	var n uint64
	err := p.db.View(func(tx *bolt.Tx) error {
		n = counter(tx.Bucket(bucketWorkshops).Get([]byte(id)))
		return nil
	})
	if err != nil {
		problem(w, http.StatusInternalServerError, engine.CodeInternal, err.Error())
		return
	}
	c := int(p.capacity)
	body, _ := json.Marshal(engine.Workshop{ID: id, Title: id, Capacity: c, Reserved: int(n), Available: c - int(n), MaxQuantity: c})
	w.Header().Set("Content-Type", api.MediaJSON)
	w.Write(body)
}

// problem answers with a problem detail of code.
func problem(w http.ResponseWriter, status int, code, detail string) {
	body, _ := json.Marshal(api.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: code, Detail: detail})
	w.Header().Set("Content-Type", api.MediaProblem)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}
