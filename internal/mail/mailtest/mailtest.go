// Package mailtest runs a real SMTP server for tests: it builds the
// smtpsink tool (internal/tools/smtpsink) and runs it as a process of its
// own, and reads the mail it stored.
//
// It imports nothing of reserve but its test helpers.
package mailtest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitTimeout bounds every wait; it only ends a hung test clearly.
const waitTimeout = 30 * time.Second

// Sink is a running smtpsink process.
type Sink struct {
	Addr string // The host:port it listens on.
	Dir  string // Its maildir: messages land in Dir/new.
	cmd  *exec.Cmd
}

// Start builds smtpsink, runs it with args (see its flags: --listen,
// --tls-cert, --tls-key, --refuse, --refuse-count, --user, --password,
// --stall) on a fresh directory until the test ends, and waits until it
// listens.
func Start(t testing.TB, args ...string) *Sink {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "smtpsink")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/reserve/reserve/internal/tools/smtpsink").CombinedOutput(); err != nil {
		t.Fatalf("build smtpsink: %v\n%s", err, out)
	}
	s := &Sink{Dir: t.TempDir()}
	cmd := exec.Command(bin, append([]string{"--dir", s.Dir}, args...)...)
	s.cmd = cmd
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("smtpsink's log:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("smtpsink did not say where it listens: %q, %v; %s", line, err, stderr.String())
	}
	s.Addr = addr
	return s
}

// Release sends the replies that --stall held back.
func (s *Sink) Release(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

// Messages returns the messages the sink accepted (or, under --stall,
// stored and holds the reply to), in the order of their arrival.
func (s *Sink) Messages(t testing.TB) [][]byte {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.Dir, "new"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs [][]byte
	for _, e := range entries { // Named <unix nanoseconds>.<sequence>.eml: ReadDir's order.
		b, err := os.ReadFile(filepath.Join(s.Dir, "new", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	return msgs
}

// Wait waits until the sink holds n messages and returns them.
func (s *Sink) Wait(t testing.TB, n int) [][]byte {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		msgs := s.Messages(t)
		if len(msgs) >= n {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink holds %d mails after %v, want %d", len(msgs), waitTimeout, n)
		}
		time.Sleep(5 * time.Millisecond) // A poll with a deadline: the sink's process signals nothing.
	}
}

// Mail is what a test reads of a stored mail.
type Mail struct {
	Header     mail.Header
	Subject    string // Decoded.
	Text, HTML string // The parts of its multipart/alternative body.
	Link       string // The first login link of its text part.
	// Calendar is the text/calendar alternative of an invitation, and
	// CalendarMethod the method its Content-Type names; Attachment is the
	// calendar object attached beside the body, decoded. All are empty
	// in a mail without a calendar.
	Calendar       []byte
	CalendarMethod string
	Attachment     []byte
}

var linkRE = regexp.MustCompile(`https?://\S+/login\?code=rlc_[A-Za-z0-9_-]+`)

// Parse reads a mail as the sink stored it; it fails the test unless the
// mail is multipart/alternative with a UTF-8 text/plain and text/html
// part, or multipart/mixed with such a body that has a text/calendar
// alternative too, and the calendar object attached (application/ics).
func Parse(t testing.TB, raw []byte) Mail {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read mail: %v\n%s", err, raw)
	}
	m := Mail{Header: msg.Header}
	if m.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		t.Fatal(err)
	}
	media, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	switch {
	case err == nil && media == "multipart/alternative":
		m.readAlternatives(t, multipart.NewReader(msg.Body, params["boundary"]), false)
	case err == nil && media == "multipart/mixed":
		r := multipart.NewReader(msg.Body, params["boundary"])
		body, err := r.NextRawPart()
		if err != nil {
			t.Fatalf("the mixed mail has no first part: %v", err)
		}
		media, params, err := mime.ParseMediaType(body.Header.Get("Content-Type"))
		if err != nil || media != "multipart/alternative" {
			t.Fatalf("the mixed mail's first part is %q, want multipart/alternative", body.Header.Get("Content-Type"))
		}
		m.readAlternatives(t, multipart.NewReader(body, params["boundary"]), true)
		att, err := r.NextRawPart()
		if err != nil {
			t.Fatalf("the mixed mail has no attachment: %v", err)
		}
		if ct := att.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/ics;") || !strings.HasPrefix(att.Header.Get("Content-Disposition"), "attachment;") {
			t.Errorf("the attachment is %q (%q), want an application/ics attachment", ct, att.Header.Get("Content-Disposition"))
		}
		m.Attachment = decoded(t, att)
		if _, err := r.NextPart(); err != io.EOF {
			t.Errorf("the mixed mail has more than its body and attachment: %v", err)
		}
	default:
		t.Fatalf("mail Content-Type %q (%v), want multipart/alternative or multipart/mixed", msg.Header.Get("Content-Type"), err)
	}
	if m.Text == "" || m.HTML == "" {
		t.Errorf("the mail lacks its text or its HTML part:\n%s", raw)
	}
	m.Link = linkRE.FindString(m.Text)
	return m
}

// readAlternatives reads the text and HTML parts, and with calendar the
// text/calendar part after them.
func (m *Mail) readAlternatives(t testing.TB, r *multipart.Reader, calendar bool) {
	t.Helper()
	for {
		part, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b := decoded(t, part)
		ct := part.Header.Get("Content-Type")
		switch media, params, _ := mime.ParseMediaType(ct); {
		case ct == "text/plain; charset=utf-8":
			m.Text = string(b)
		case ct == "text/html; charset=utf-8":
			m.HTML = string(b)
		case calendar && media == "text/calendar" && params["charset"] == "utf-8":
			m.Calendar, m.CalendarMethod = b, params["method"]
		default:
			t.Errorf("unexpected part %q", ct)
		}
	}
	if calendar && m.Calendar == nil {
		t.Errorf("the invitation's body has no text/calendar alternative")
	}
}

// decoded returns a part's body, decoded by its Content-Transfer-Encoding.
func decoded(t testing.TB, p *multipart.Part) []byte {
	t.Helper()
	var r io.Reader = p
	switch enc := p.Header.Get("Content-Transfer-Encoding"); enc {
	case "quoted-printable":
		r = quotedprintable.NewReader(p)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, p)
	case "", "7bit", "8bit":
	default:
		t.Fatalf("part %q has the transfer encoding %q", p.Header.Get("Content-Type"), enc)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode part %q: %v", p.Header.Get("Content-Type"), err)
	}
	return b
}

// Metric returns the value of sample (e.g. `reserved_mail_sent_total` or
// `reserved_mail_failed_total{reason="permanent"}`) in a Prometheus text
// exposition, and whether it is there.
func Metric(exposition, sample string) (float64, bool) {
	for line := range strings.SplitSeq(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}
