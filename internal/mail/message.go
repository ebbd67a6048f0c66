// Package mail sends the daemon's mail: it builds messages with the
// standard library (multipart/alternative with a text and an HTML part,
// RFC 2047 encoded subjects), hands them to an SMTP server over STARTTLS
// (plain text only to a loopback server), and queues them in memory so
// that no request waits for a mail server. A queued message is retried
// with backoff after a temporary failure and given up after a permanent
// one or at its deadline; both are logged and counted.
//
// It imports nothing of reserve.
package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html/template"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// Message is one mail to one recipient: a subject, a plain text body and
// an HTML body saying the same, in the language Lang (a BCP 47 tag such
// as "en" or "de").
type Message struct {
	From    mail.Address
	To      mail.Address
	Subject string
	Text    string
	// HTML is the HTML body: build it with html/template (HTMLBody), so
	// that everything inserted is escaped.
	HTML template.HTML
	Lang string
	// Deadline, if set, is when the message is no longer worth sending
	// (the link it carries has expired): the queue gives it up then.
	Deadline time.Time
}

// HTMLBody executes tmpl with data into an HTML body; html/template
// escapes every value it inserts.
func HTMLBody(tmpl *template.Template, data any) (template.HTML, error) {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("build the HTML part: %w", err)
	}
	return template.HTML(b.String()), nil
}

// Compose returns m as an RFC 5322 message with CRLF line ends: the
// header fields From, To, Subject (RFC 2047 encoded when it is not plain
// ASCII), Date (now), Message-ID (random, at the domain of From),
// MIME-Version and Content-Language, and a multipart/alternative body of
// a text/plain and a text/html part, both UTF-8 and quoted-printable.
func Compose(m Message, now time.Time) ([]byte, error) {
	_, domain, ok := strings.Cut(m.From.Address, "@")
	if !ok || domain == "" {
		return nil, fmt.Errorf("the sender %q has no domain for the Message-ID", m.From.Address)
	}
	var raw [16]byte
	rand.Read(raw[:]) // crypto/rand.Read never fails.
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	header := []struct{ name, value string }{
		{"From", m.From.String()},
		{"To", m.To.String()},
		{"Subject", mime.QEncoding.Encode("utf-8", m.Subject)},
		{"Date", now.Format(time.RFC1123Z)},
		{"Message-ID", "<" + hex.EncodeToString(raw[:]) + "@" + domain + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Language", m.Lang},
		{"Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mw.Boundary()})},
	}
	var out bytes.Buffer
	for _, h := range header {
		if strings.ContainsAny(h.value, "\r\n") {
			return nil, fmt.Errorf("header field %s holds a line break", h.name)
		}
		fmt.Fprintf(&out, "%s: %s\r\n", h.name, h.value)
	}
	out.WriteString("\r\n")
	for _, part := range []struct{ kind, body string }{{"text/plain", m.Text}, {"text/html", string(m.HTML)}} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.kind + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		qw := quotedprintable.NewWriter(pw)
		if _, err := qw.Write([]byte(crlf(part.body))); err != nil {
			return nil, err
		}
		if err := qw.Close(); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	out.Write(b.Bytes())
	return out.Bytes(), nil
}

// crlf makes every line end of s CRLF.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
