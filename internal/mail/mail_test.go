package mail_test

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	rmail "github.com/reserve/reserve/internal/mail"
)

func TestComposeIsMultipartAlternative(t *testing.T) {
	body, err := rmail.HTMLBody(template.Must(template.New("").Parse(`<p>{{.}}</p>`)), `<script>"x"&`)
	if err != nil {
		t.Fatal(err)
	}
	m := rmail.Message{
		From:    mail.Address{Name: "Reserve", Address: "noreply@example.org"},
		To:      mail.Address{Address: "jörg@example.org"},
		Subject: "Ihr Anmeldelink für Reserve",
		Text:    "Öffnen Sie\nden Link.",
		HTML:    body,
		Lang:    "de",
	}
	raw, err := rmail.Compose(m, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read composed message: %v\n%s", err, raw)
	}
	if s := msg.Header.Get("Subject"); !strings.HasPrefix(s, "=?utf-8?q?") {
		t.Errorf("non-ASCII subject %q is not RFC 2047 encoded", s)
	}
	dec := new(mime.WordDecoder)
	if s, _ := dec.DecodeHeader(msg.Header.Get("Subject")); s != m.Subject {
		t.Errorf("subject decodes to %q", s)
	}
	if d, err := msg.Header.Date(); err != nil || !d.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("Date = %v, %v", d, err)
	}
	if id := msg.Header.Get("Message-ID"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.org>") {
		t.Errorf("Message-ID = %q", id)
	}
	if l := msg.Header.Get("Content-Language"); l != "de" {
		t.Errorf("Content-Language = %q", l)
	}
	if to, err := msg.Header.AddressList("To"); err != nil || to[0].Address != "jörg@example.org" {
		t.Errorf("To = %v, %v", to, err)
	}
	media, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || media != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	parts := map[string]string{}
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextPart() // Decodes quoted-printable.
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		parts[strings.Split(p.Header.Get("Content-Type"), ";")[0]] = string(b)
	}
	if parts["text/plain"] != "Öffnen Sie\r\nden Link." {
		t.Errorf("text part = %q", parts["text/plain"])
	}
	if h := parts["text/html"]; h != "<p>&lt;script&gt;&#34;x&#34;&amp;</p>" {
		t.Errorf("html part = %q, want the inserted text escaped", h)
	}
	if !bytes.Contains(raw, []byte("\r\n\r\n")) || bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Errorf("the message has a bare line feed:\n%q", raw)
	}
}

func TestComposeRefusesHeaderInjection(t *testing.T) {
	m := rmail.Message{From: mail.Address{Address: "a@example.org"}, To: mail.Address{Address: "b@example.org"}, Subject: "x\r\nBcc: c@example.org"}
	raw, err := rmail.Compose(m, time.Now())
	if err == nil {
		if msg, _ := mail.ReadMessage(bytes.NewReader(raw)); msg != nil && msg.Header.Get("Bcc") != "" {
			t.Fatalf("a subject with a line break added a header field:\n%s", raw)
		}
	}
}

func TestParseURL(t *testing.T) {
	s, err := rmail.ParseURL("smtp://ada:s3cret@mail.example.org:587", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "mail.example.org" || s.Port != "587" || s.User != "ada" || s.Password != "s3cret" || s.Loopback {
		t.Errorf("parsed %+v", s)
	}
	if strings.Contains(s.String(), "s3cret") {
		t.Errorf("String() = %q shows the password", s.String())
	}
	file := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(file, []byte("from-file\n"), 0o600)
	for raw, want := range map[string]rmail.Server{
		"smtp://127.0.0.1":       {Host: "127.0.0.1", Port: "25", Loopback: true},
		"smtp://localhost:2525":  {Host: "localhost", Port: "2525", Loopback: true},
		"smtp://[::1]:25":        {Host: "::1", Port: "25", Loopback: true},
		"smtp://bob@example.org": {Host: "example.org", Port: "25", User: "bob", Password: "from-file"},
	} {
		pw := ""
		if want.User != "" {
			pw = file
		}
		if got, err := rmail.ParseURL(raw, pw); err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v, want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"smtps://ada:s3cret@example.org", "http://example.org", "smtp://", "smtp://:s3cret@example.org", "smtp://ada:s3cret@example.org/x", "smtp://ada:s3cret@example.org?tls=no"} {
		_, err := rmail.ParseURL(raw, "")
		if err == nil {
			t.Errorf("ParseURL(%q) accepted", raw)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL(%q): %v shows the password", raw, err)
		}
	}
}

func TestPermanent(t *testing.T) {
	for err, want := range map[error]bool{
		&textproto.Error{Code: 550, Msg: "no"}:                             true,
		&textproto.Error{Code: 451, Msg: "later"}:                          false,
		errors.New("connection refused"):                                   false,
		rmail.ErrNoStartTLS:                                                true,
		errors.Join(errors.New("x"), &textproto.Error{Code: 554, Msg: ""}): true,
	} {
		if got := rmail.Permanent(err); got != want {
			t.Errorf("Permanent(%v) = %t, want %t", err, got, want)
		}
	}
}

// script is a Sender that answers each attempt with the next error of its
// script (nil: accepted), then accepts.
type script struct {
	mu      sync.Mutex
	answers []error
	sent    chan []byte
}

func (s *script) Send(_ context.Context, _, _ string, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if len(s.answers) > 0 {
		err, s.answers = s.answers[0], s.answers[1:]
	}
	if err == nil {
		s.sent <- msg
	}
	return err
}

func message() rmail.Message {
	return rmail.Message{From: mail.Address{Address: "a@example.org"}, To: mail.Address{Address: "b@example.org"}, Subject: "s", Text: "t", HTML: "<p>t</p>", Lang: "en"}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueueRetriesTemporaryFailures(t *testing.T) {
	s := &script{answers: []error{&textproto.Error{Code: 451, Msg: "try later"}, errors.New("connection reset")}, sent: make(chan []byte, 1)}
	q := rmail.NewQueue(rmail.QueueConfig{Sender: s, MinBackoff: time.Millisecond})
	defer q.Start(context.Background())()
	if err := q.Enqueue(message()); err != nil {
		t.Fatal(err)
	}
	<-s.sent
	waitFor(t, "the queue to empty", func() bool { return gauge(t, q, "reserved_mail_queue_length") == 0 })
	if got := counter(t, q, "reserved_mail_retries_total", ""); got != 2 {
		t.Errorf("retries = %v, want 2", got)
	}
	if got := counter(t, q, "reserved_mail_sent_total", ""); got != 1 {
		t.Errorf("sent = %v, want 1", got)
	}
}

func TestQueueGivesUpPermanentFailures(t *testing.T) {
	s := &script{answers: []error{&textproto.Error{Code: 550, Msg: "no such user"}}, sent: make(chan []byte, 1)}
	q := rmail.NewQueue(rmail.QueueConfig{Sender: s, MinBackoff: time.Millisecond})
	defer q.Start(context.Background())()
	q.Enqueue(message())
	waitFor(t, "the mail to be given up", func() bool { return counter(t, q, "reserved_mail_failed_total", "permanent") == 1 })
	if got := counter(t, q, "reserved_mail_retries_total", ""); got != 0 {
		t.Errorf("a 5xx was retried %v times", got)
	}
	if g := gauge(t, q, "reserved_mail_queue_length"); g != 0 {
		t.Errorf("queue length %v after giving up", g)
	}
}

func TestQueueGivesUpAtDeadline(t *testing.T) {
	s := &script{answers: []error{errors.New("down")}, sent: make(chan []byte, 1)}
	q := rmail.NewQueue(rmail.QueueConfig{Sender: s, MinBackoff: time.Hour})
	defer q.Start(context.Background())()
	m := message()
	m.Deadline = time.Now().Add(time.Minute)
	q.Enqueue(m)
	waitFor(t, "the mail to expire", func() bool { return counter(t, q, "reserved_mail_failed_total", "expired") == 1 })
}

func TestQueueIsBounded(t *testing.T) {
	s := &script{sent: make(chan []byte, 2)}
	q := rmail.NewQueue(rmail.QueueConfig{Sender: s, Capacity: 2}) // Not started: nothing leaves.
	for range 2 {
		if err := q.Enqueue(message()); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Enqueue(message()); !errors.Is(err, rmail.ErrQueueFull) {
		t.Fatalf("third message into a queue of 2: %v, want ErrQueueFull", err)
	}
	if got := counter(t, q, "reserved_mail_failed_total", "queue_full"); got != 1 {
		t.Errorf("queue_full = %v", got)
	}
	defer q.Start(context.Background())()
	<-s.sent
	<-s.sent
}

func collector(t *testing.T, q *rmail.Queue, name string) prometheus.Collector {
	t.Helper()
	for _, c := range q.Collectors() {
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if strings.Contains(d.String(), `"`+name+`"`) {
				return c
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func counter(t *testing.T, q *rmail.Queue, name, reason string) float64 {
	c := collector(t, q, name)
	if v, ok := c.(*prometheus.CounterVec); ok {
		return testutil.ToFloat64(v.WithLabelValues(reason))
	}
	return testutil.ToFloat64(c)
}

func gauge(t *testing.T, q *rmail.Queue, name string) float64 {
	return testutil.ToFloat64(collector(t, q, name))
}
