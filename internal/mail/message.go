// Package mail sends the daemon's mail: it builds messages with the
// standard library (multipart/alternative with a text and an HTML part,
// in multipart/mixed with an iCalendar invitation when there is one, RFC
// 2047 encoded subjects), hands them to an SMTP server over STARTTLS
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
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
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
// as "en" or "de"), and perhaps a calendar object.
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

	// MessageID, Date and Boundary, when set, fix what Compose otherwise
	// makes afresh, so that composing the same message again gives the
	// same bytes (a resend that a receiver recognizes as the same mail).
	// MessageID is the Message-ID without its angle brackets
	// ("left@right"); Date is the Date; Boundary is the seed of the MIME
	// boundaries: at most 60 letters, digits, '-', '_' and '.'.
	MessageID string
	Date      time.Time
	Boundary  string

	// Calendar, if set, is an iCalendar object sent with the mail the way
	// calendar clients take an invitation: as a third alternative of the
	// body (text/calendar with its method), and again as an attachment.
	Calendar *Calendar
}

// Calendar is an iCalendar object (RFC 5545) carried by a mail (RFC
// 6047).
type Calendar struct {
	// Method is the object's METHOD (REQUEST, CANCEL), repeated in the
	// Content-Type, where clients look for it.
	Method string
	// Data is the object, its lines ended by CRLF.
	Data []byte
	// Filename names the attachment; empty means "invite.ics".
	Filename string
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
// ASCII), Date, Message-ID, MIME-Version and Content-Language, and a
// multipart/alternative body of a text/plain and a text/html part, both
// UTF-8 and quoted-printable. Date is m.Date, else now; Message-ID is
// m.MessageID, else random at the domain of From; the boundaries are made
// from m.Boundary, else at random.
//
// A message with a calendar is multipart/mixed instead, as calendar
// clients expect an invitation: its first part is the
// multipart/alternative body with the calendar object as its third
// alternative (text/calendar with the object's method), its second the
// same object as an attachment (application/ics), both base64, which
// keeps the object's CRLF line ends and long lines intact on any mail
// path.
//
// A header field value with a line break is refused, never written.
func Compose(m Message, now time.Time) ([]byte, error) {
	_, domain, ok := strings.Cut(m.From.Address, "@")
	if !ok || domain == "" {
		return nil, fmt.Errorf("the sender %q has no domain for the Message-ID", m.From.Address)
	}
	id := m.MessageID
	if id == "" {
		var raw [16]byte
		rand.Read(raw[:]) // crypto/rand.Read never fails.
		id = hex.EncodeToString(raw[:]) + "@" + domain
	} else if err := checkMessageID(id); err != nil {
		return nil, err
	}
	date := m.Date
	if date.IsZero() {
		date = now
	}
	// Both writers write to body, the inner one between the outer one's
	// first part header and its second part.
	var body bytes.Buffer
	alt := multipart.NewWriter(&body)
	top := alt // The writer of the outermost part.
	if m.Calendar != nil {
		top = multipart.NewWriter(&body)
	}
	if m.Boundary != "" || m.Calendar != nil {
		seed := m.Boundary
		if seed == "" {
			var raw [24]byte
			rand.Read(raw[:])
			seed = hex.EncodeToString(raw[:])
		} else if err := checkBoundary(seed); err != nil {
			return nil, err
		}
		// "=_" never occurs in quoted-printable or base64 text, so no
		// part can hold a boundary; the two boundaries differ in their
		// third character, so neither is a prefix of the other.
		if err := top.SetBoundary("=_m" + seed); err != nil {
			return nil, fmt.Errorf("MIME boundary: %w", err)
		}
		if top != alt {
			if err := alt.SetBoundary("=_a" + seed); err != nil {
				return nil, fmt.Errorf("MIME boundary: %w", err)
			}
		}
	}
	contentType := mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": top.Boundary()})
	if m.Calendar != nil {
		contentType = mime.FormatMediaType("multipart/mixed", map[string]string{"boundary": top.Boundary()})
	}
	header := []struct{ name, value string }{
		{"From", m.From.String()},
		{"To", m.To.String()},
		{"Subject", mime.QEncoding.Encode("utf-8", m.Subject)},
		{"Date", date.Format(time.RFC1123Z)},
		{"Message-ID", "<" + id + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Language", m.Lang},
		{"Content-Type", contentType},
	}
	var out bytes.Buffer
	for _, h := range header {
		if strings.ContainsAny(h.value, "\r\n") {
			return nil, fmt.Errorf("header field %s holds a line break", h.name)
		}
		fmt.Fprintf(&out, "%s: %s\r\n", h.name, h.value)
	}
	out.WriteString("\r\n")
	if m.Calendar != nil {
		if _, err := top.CreatePart(textproto.MIMEHeader{
			"Content-Type": {mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": alt.Boundary()})},
		}); err != nil {
			return nil, err
		}
	}
	for _, part := range []struct{ kind, body string }{{"text/plain", m.Text}, {"text/html", string(m.HTML)}} {
		pw, err := alt.CreatePart(textproto.MIMEHeader{
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
	if m.Calendar != nil {
		if err := writeCalendar(top, alt, *m.Calendar); err != nil {
			return nil, err
		}
	} else if err := alt.Close(); err != nil {
		return nil, err
	}
	out.Write(body.Bytes())
	return out.Bytes(), nil
}

// writeCalendar writes c as the last alternative of alt and closes alt,
// then writes c as an attachment of top and closes top.
func writeCalendar(top, alt *multipart.Writer, c Calendar) error {
	if c.Method == "" || strings.TrimFunc(c.Method, func(r rune) bool { return r >= 'A' && r <= 'Z' }) != "" {
		return fmt.Errorf("calendar method %q is not a method such as REQUEST", c.Method)
	}
	name := c.Filename
	if name == "" {
		name = "invite.ics"
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '/' || r == '\\' }) {
		return fmt.Errorf("calendar file name %q holds a control character or a slash", name)
	}
	for _, p := range []struct {
		w      *multipart.Writer
		header textproto.MIMEHeader
	}{
		{alt, textproto.MIMEHeader{
			"Content-Type":              {mime.FormatMediaType("text/calendar", map[string]string{"charset": "utf-8", "method": c.Method})},
			"Content-Transfer-Encoding": {"base64"},
		}},
		{top, textproto.MIMEHeader{
			"Content-Type":              {mime.FormatMediaType("application/ics", map[string]string{"name": name})},
			"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": name})},
			"Content-Transfer-Encoding": {"base64"},
		}},
	} {
		pw, err := p.w.CreatePart(p.header)
		if err != nil {
			return err
		}
		if err := writeBase64(pw, c.Data); err != nil {
			return err
		}
		if err := p.w.Close(); err != nil {
			return err
		}
	}
	return nil
}

// writeBase64 writes data base64 encoded in lines of 76 characters, each
// ended by CRLF.
func writeBase64(w io.Writer, data []byte) error {
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 0 {
		n := min(76, len(enc))
		if _, err := io.WriteString(w, enc[:n]+"\r\n"); err != nil {
			return err
		}
		enc = enc[n:]
	}
	return nil
}

// checkMessageID checks a Message-ID without its angle brackets: a left
// and a right part around one "@", of printable ASCII other than the
// specials that would end or break the field.
func checkMessageID(id string) error {
	left, right, ok := strings.Cut(id, "@")
	bad := !ok || left == "" || right == "" || strings.Contains(right, "@") ||
		strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune(`<>()[]\",;:`, r) })
	if bad {
		return fmt.Errorf("Message-ID %q is not of the form left@right in printable ASCII", id)
	}
	return nil
}

// checkBoundary checks the seed of the MIME boundaries.
func checkBoundary(seed string) error {
	if len(seed) > 60 || strings.ContainsFunc(seed, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		return fmt.Errorf("MIME boundary seed %q is not at most 60 letters, digits, '-', '_' and '.'", seed)
	}
	return nil
}

// crlf makes every line end of s CRLF.
func crlf(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
