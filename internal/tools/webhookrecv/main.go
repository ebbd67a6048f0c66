// Command webhookrecv is a webhook endpoint for tests: it verifies every
// request with the Standard Webhooks reference library
// (github.com/standard-webhooks/standard-webhooks/libraries), answers it
// as its path is told to, and records it as one JSON line in the --record
// file: the path, the webhook-id, the SHA-256 of the body, the event's
// type and time from the body, when it arrived, and the status it was
// answered with. A request that does not verify is answered 401 and
// recorded with "bad" saying why.
//
// Each path is configured with a PUT of a JSON object to /_paths<path>:
//
//	{"secret":"whsec_…","fail":N,"gone":M,"mode":"answer"}
//
// that answers its first N verified requests 500, the next M 410, and
// every later one 200; mode "fail" answers every one 500, and "hang"
// never answers (it waits until the sender gives up). A path nobody
// configured behaves as the flags say (--secret, --fail, --gone,
// --mode). It prints "listening ADDR" on standard output once it accepts
// connections, and serves until killed.
//
// It is a test tool: it imports nothing of reserve.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// configPrefix starts the paths that configure the other paths.
const configPrefix = "/_paths"

// maxBody bounds a request's body.
const maxBody = 1 << 20

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "webhookrecv:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	record := flag.String("record", "", "file to append a JSON line to for every request (required)")
	var def behaviour
	flag.StringVar(&def.Secret, "secret", "", "signing secret (whsec_…) of the paths nobody configured")
	flag.IntVar(&def.Fail, "fail", 0, "answer the first N verified requests of a path 500")
	flag.IntVar(&def.Gone, "gone", 0, "answer the next M verified requests of a path 410")
	flag.StringVar(&def.Mode, "mode", "answer", "answer (as --fail and --gone say, then 200), fail (always 500) or hang (never answer)")
	flag.Parse()
	if *record == "" {
		return errors.New("--record is required")
	}
	if err := def.check(); err != nil {
		return err
	}
	f, err := os.OpenFile(*record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	rc := &receiver{record: f, def: def, paths: map[string]*path{}}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// behaviour is how a path answers.
type behaviour struct {
	Secret string `json:"secret"`
	Fail   int    `json:"fail"`
	Gone   int    `json:"gone"`
	Mode   string `json:"mode"`
}

func (b *behaviour) check() error {
	switch b.Mode {
	case "":
		b.Mode = "answer"
	case "answer", "fail", "hang":
	default:
		return fmt.Errorf("mode %q: use answer, fail or hang", b.Mode)
	}
	if b.Fail < 0 || b.Gone < 0 {
		return fmt.Errorf("fail %d and gone %d must not be negative", b.Fail, b.Gone)
	}
	return nil
}

// path is a path's behaviour and how many verified requests it got.
type path struct {
	behaviour
	verified int
}

// line is one line of the record.
type line struct {
	Path       string    `json:"path"`
	WebhookID  string    `json:"webhook_id"`
	SHA256     string    `json:"sha256"`
	Type       string    `json:"type,omitempty"`
	EventTime  time.Time `json:"event_time,omitzero"`
	ReceivedAt time.Time `json:"received_at"`
	Status     int       `json:"status,omitempty"`
	Bad        string    `json:"bad,omitempty"`
}

type receiver struct {
	mu     sync.Mutex
	record *os.File
	def    behaviour
	paths  map[string]*path
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := strings.CutPrefix(r.URL.Path, configPrefix); ok && r.Method == http.MethodPut {
		rc.configure(w, r, p)
		return
	}
	received := time.Now().UTC()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	sum := sha256.Sum256(body)
	l := line{Path: r.URL.Path, WebhookID: r.Header.Get("webhook-id"), SHA256: hex.EncodeToString(sum[:]), ReceivedAt: received}
	var ev struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
	}
	rc.mu.Lock()
	p := rc.path(r.URL.Path)
	switch {
	case err != nil:
		l.Bad = "body: " + err.Error()
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
		l.Bad = fmt.Sprintf("%s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
	default:
		if wh, err := standardwebhooks.NewWebhook(p.Secret); err != nil {
			l.Bad = "secret: " + err.Error()
		} else if err := wh.Verify(body, r.Header); err != nil {
			l.Bad = err.Error()
		} else if err := json.Unmarshal(body, &ev); err != nil || ev.Type == "" || ev.Timestamp.IsZero() {
			l.Bad = fmt.Sprintf("body is not {\"type\",\"timestamp\",\"data\"}: %v", err)
		}
	}
	l.Type, l.EventTime = ev.Type, ev.Timestamp
	hang := false
	switch {
	case l.Bad != "":
		l.Status = http.StatusUnauthorized
	case p.Mode == "hang":
		hang = true
	case p.Mode == "fail" || p.verified < p.Fail:
		l.Status = http.StatusInternalServerError
	case p.verified < p.Fail+p.Gone:
		l.Status = http.StatusGone
	default:
		l.Status = http.StatusOK
	}
	if l.Bad == "" {
		p.verified++
	}
	rc.write(l)
	rc.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	w.WriteHeader(l.Status)
}

// path returns the behaviour of path p, made from the flags at its first
// request if nobody configured it.
func (rc *receiver) path(p string) *path {
	if rc.paths[p] == nil {
		rc.paths[p] = &path{behaviour: rc.def}
	}
	return rc.paths[p]
}

// configure sets the behaviour of path p from the request's body.
func (rc *receiver) configure(w http.ResponseWriter, r *http.Request, p string) {
	var b behaviour
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := b.check(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.paths[p] = &path{behaviour: b}
	w.WriteHeader(http.StatusNoContent)
}

// write appends l to the record, in one write.
func (rc *receiver) write(l line) {
	b, err := json.Marshal(l)
	if err == nil {
		_, err = rc.record.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookrecv: record:", err)
	}
}
