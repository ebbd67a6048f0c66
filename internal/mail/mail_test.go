package mail_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"html/template"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
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

// fixed is a message whose Message-ID, Date and boundaries are fixed, with
// a calendar object.
func fixed() rmail.Message {
	m := message()
	m.Subject, m.Text, m.HTML = "Reserviert: Töpfern", "Hallo,\nIhr Platz ist reserviert.", "<p>Hallo,</p><p>Ihr Platz ist reserviert.</p>"
	m.MessageID = "0190aabbccddeeff0011223344556677.mail@example.org"
	m.Date = time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC)
	m.Boundary = "0190aabbccddeeff"
	m.Calendar = &rmail.Calendar{Method: "REQUEST", Data: []byte("BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nSUMMARY:T\u00f6pfern " + strings.Repeat("lang ", 30) + "\r\nEND:VCALENDAR\r\n")}
	return m
}

// A message with its Message-ID, Date and boundary fixed is the same bytes
// however often it is composed, and at whatever time; without them, two
// compositions differ in both, as the sign-in mails always did.
func TestComposeFixedIsRepeatable(t *testing.T) {
	m := fixed()
	a, err := rmail.Compose(m, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b, err := rmail.Compose(m, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("two compositions of a fixed message differ:\n%s\n---\n%s", a, b)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if id := msg.Header.Get("Message-ID"); id != "<"+m.MessageID+">" {
		t.Errorf("Message-ID = %q", id)
	}
	if d, _ := msg.Header.Date(); !d.Equal(m.Date) {
		t.Errorf("Date = %v, want %v", d, m.Date)
	}
	plain := message()
	x, _ := rmail.Compose(plain, time.Now())
	y, _ := rmail.Compose(plain, time.Now())
	mx, _ := mail.ReadMessage(bytes.NewReader(x))
	my, _ := mail.ReadMessage(bytes.NewReader(y))
	if mx.Header.Get("Message-ID") == my.Header.Get("Message-ID") || mx.Header.Get("Content-Type") == my.Header.Get("Content-Type") {
		t.Errorf("two compositions of a message without fixed fields share a Message-ID or boundary")
	}
	if ct := mx.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/alternative; boundary=") {
		t.Errorf("a message without a calendar is %q, want multipart/alternative", ct)
	}
}

// part is one leaf of a parsed MIME tree.
type part struct {
	path   string // The media types from the top, joined by " > ".
	header textproto.MIMEHeader
	body   []byte // Decoded.
}

// leaves returns the leaves of a multipart body, decoded.
func leaves(t *testing.T, contentType string, body io.Reader, path string) []part {
	t.Helper()
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("Content-Type %q: %v", contentType, err)
	}
	path += media
	if !strings.HasPrefix(media, "multipart/") {
		t.Fatalf("%s is no multipart", path)
	}
	var out []part
	r := multipart.NewReader(body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		ct := p.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "multipart/") {
			out = append(out, leaves(t, ct, p, path+" > ")...)
			continue
		}
		var dec io.Reader = p
		switch p.Header.Get("Content-Transfer-Encoding") {
		case "base64":
			dec = base64.NewDecoder(base64.StdEncoding, p)
		case "quoted-printable":
			dec = quotedprintable.NewReader(p)
		}
		b, err := io.ReadAll(dec)
		if err != nil {
			t.Fatalf("decode %s: %v", ct, err)
		}
		media, _, _ := mime.ParseMediaType(ct)
		out = append(out, part{path + " > " + media, p.Header, b})
	}
}

// A message with a calendar is multipart/mixed: the body's alternatives
// (text, HTML, the calendar with its method) and the calendar again as an
// attachment; the object comes back byte for byte from both, and the
// boundaries are not prefixes of each other.
func TestComposeCalendarInvitation(t *testing.T) {
	m := fixed()
	raw, err := rmail.Compose(m, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	ps := leaves(t, msg.Header.Get("Content-Type"), msg.Body, "")
	var paths []string
	for _, p := range ps {
		paths = append(paths, p.path)
	}
	want := []string{
		"multipart/mixed > multipart/alternative > text/plain",
		"multipart/mixed > multipart/alternative > text/html",
		"multipart/mixed > multipart/alternative > text/calendar",
		"multipart/mixed > application/ics",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("parts:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	if ct := ps[2].header.Get("Content-Type"); ct != "text/calendar; charset=utf-8; method=REQUEST" {
		t.Errorf("calendar part Content-Type = %q", ct)
	}
	if cd := ps[3].header.Get("Content-Disposition"); cd != "attachment; filename=invite.ics" {
		t.Errorf("attachment Content-Disposition = %q", cd)
	}
	for _, p := range ps[2:] {
		if !bytes.Equal(p.body, m.Calendar.Data) {
			t.Errorf("%s decodes to %q, want the object", p.path, p.body)
		}
	}
	if string(ps[0].body) != "Hallo,\r\nIhr Platz ist reserviert." {
		t.Errorf("text part = %q", ps[0].body)
	}
	_, outer, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	innerType, _, _ := bytes.Cut(raw[bytes.Index(raw, []byte("multipart/alternative")):], []byte("\r\n"))
	_, inner, _ := mime.ParseMediaType(string(innerType))
	if b, c := outer["boundary"], inner["boundary"]; b == "" || c == "" || strings.HasPrefix(b, c) || strings.HasPrefix(c, b) {
		t.Errorf("boundaries %q and %q: one is a prefix of the other", b, c)
	}
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Errorf("the message has a bare line feed")
	}
	for line := range strings.SplitSeq(string(raw), "\r\n") {
		if len(line) > 78 && !strings.HasPrefix(line, "Content-Type:") {
			t.Errorf("a line of %d characters: %q", len(line), line)
		}
	}
}

// Header injection stays refused through the fields a caller may now fix,
// and a bad boundary seed or calendar method is refused.
func TestComposeRefusesBadFixedFields(t *testing.T) {
	for name, change := range map[string]func(*rmail.Message){
		"line break in Message-ID":   func(m *rmail.Message) { m.MessageID = "a@example.org>\r\nBcc: c@example.org" },
		"Message-ID without @":       func(m *rmail.Message) { m.MessageID = "nothing-here" },
		"Message-ID with two @":      func(m *rmail.Message) { m.MessageID = "a@b@example.org" },
		"Message-ID with >":          func(m *rmail.Message) { m.MessageID = "a>@example.org" },
		"Message-ID with space":      func(m *rmail.Message) { m.MessageID = "a b@example.org" },
		"boundary with a line break": func(m *rmail.Message) { m.Boundary = "abc\r\nBcc: x" },
		"boundary with a quote":      func(m *rmail.Message) { m.Boundary = `abc"` },
		"boundary too long":          func(m *rmail.Message) { m.Boundary = strings.Repeat("a", 61) },
		"calendar method injection":  func(m *rmail.Message) { m.Calendar.Method = "REQUEST\r\nBcc: x" },
		"calendar method lowercase":  func(m *rmail.Message) { m.Calendar.Method = "request" },
		"calendar file name":         func(m *rmail.Message) { m.Calendar.Filename = "a\r\nb.ics" },
		"subject injection":          func(m *rmail.Message) { m.Subject = "x\r\nBcc: c@example.org" },
	} {
		m := fixed()
		change(&m)
		raw, err := rmail.Compose(m, time.Now())
		if err != nil {
			continue
		}
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil || msg.Header.Get("Bcc") != "" || name != "subject injection" {
			t.Errorf("%s: composed\n%s", name, raw)
		}
	}
}

// Send gives up when its context ends, whatever the server is doing: a
// server that accepts the connection and never greets holds it only
// until then, not for the whole session's time.
func TestSendEndsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c // Held open, silent.
		}
	}()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	srv := rmail.Server{Host: host, Port: port, Loopback: true}
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() { sent <- srv.Send(ctx, "a@example.org", "b@example.org", []byte("x")) }()
	conn := <-accepted
	defer conn.Close()
	cancel()
	select {
	case err := <-sent:
		if err == nil {
			t.Fatal("Send to a silent server succeeded")
		}
	case <-time.After(30 * time.Second): // Only ends a hang: the session's own limit is a minute.
		t.Fatal("Send did not return after its context was cancelled")
	}
}
