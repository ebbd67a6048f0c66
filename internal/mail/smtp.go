package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"time"
)

// Server is where mail goes: an SMTP server (host and port) and the
// credentials for it, if any.
type Server struct {
	Host     string
	Port     string
	User     string
	Password string
	// Loopback is set when Host is a loopback address or "localhost": only
	// then is mail sent without STARTTLS.
	Loopback bool
}

// ParseURL parses smtp://[user[:password]@]host[:port] (port 25 when
// omitted). A password in passwordFile (its first line) replaces one in
// the URL. Errors never quote the password.
func ParseURL(raw, passwordFile string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, fmt.Errorf("--smtp is not a URL such as smtp://user@mail.example.org:587")
	}
	redacted := u.Redacted()
	if u.Scheme != "smtp" {
		return Server{}, fmt.Errorf("--smtp %s: the scheme must be smtp:// (STARTTLS is used on it)", redacted)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Server{}, fmt.Errorf("--smtp %s: only smtp://[user[:password]@]host[:port] is accepted", redacted)
	}
	s := Server{Host: u.Hostname(), Port: u.Port()}
	if s.Host == "" {
		return Server{}, fmt.Errorf("--smtp %s names no host", redacted)
	}
	if s.Port == "" {
		s.Port = "25"
	}
	if u.User != nil {
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return Server{}, fmt.Errorf("read the SMTP password file: %w", err)
		}
		s.Password, _, _ = strings.Cut(strings.TrimRight(string(b), "\r\n"), "\n")
		s.Password = strings.TrimSuffix(s.Password, "\r")
	}
	if s.Password != "" && s.User == "" {
		return Server{}, fmt.Errorf("--smtp %s: a password needs a user name in the URL", redacted)
	}
	ip := net.ParseIP(s.Host)
	s.Loopback = strings.EqualFold(s.Host, "localhost") || ip != nil && ip.IsLoopback()
	return s, nil
}

// Addr is host:port.
func (s Server) Addr() string { return net.JoinHostPort(s.Host, s.Port) }

// String names the server without its password.
func (s Server) String() string {
	u := url.URL{Scheme: "smtp", Host: s.Addr()}
	if s.User != "" {
		u.User = url.User(s.User)
	}
	return u.String()
}

// ErrNoStartTLS is the refusal to send over a server that is not on
// loopback and offers no STARTTLS.
var ErrNoStartTLS = errors.New("the mail server does not offer STARTTLS, and mail goes out in clear text only to a server on a loopback address")

// dialTimeout and sessionTimeout bound how long one delivery may take.
const (
	dialTimeout    = 15 * time.Second
	sessionTimeout = time.Minute
)

// Check connects to the server and says whether mail can go out there:
// ErrNoStartTLS for a server that is not on loopback and offers no
// STARTTLS, a connection error when it cannot be reached.
func (s Server) Check(ctx context.Context) error {
	c, done, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	return c.Quit()
}

// open connects, greets, starts TLS unless the server is on loopback
// (refusing a server that is not and offers no STARTTLS) and
// authenticates. The session ends at sessionTimeout, at ctx's deadline
// if that is sooner, or when ctx is cancelled, whatever it is waiting
// for; done closes it.
func (s Server) open(ctx context.Context) (c *smtp.Client, done func(), err error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(sessionTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	c, err = smtp.NewClient(conn, s.Host)
	if err != nil {
		stop()
		conn.Close()
		return nil, nil, err
	}
	done = func() {
		stop()
		c.Close()
	}
	if err := s.greet(c); err != nil {
		done()
		return nil, nil, err
	}
	return c, done, nil
}

// greet says hello, starts TLS unless the server is on loopback and
// authenticates; it leaves closing c to its caller.
func (s Server) greet(c *smtp.Client) error {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	if err := c.Hello(host); err != nil {
		return err
	}
	// Mail to a loopback server never leaves the machine: it goes in
	// plain text, also where the server offers STARTTLS with a
	// certificate made for nobody (as a local Postfix does).
	if !s.Loopback {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return ErrNoStartTLS
		}
		if err := c.StartTLS(&tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if s.User != "" {
		if err := c.Auth(smtp.PlainAuth("", s.User, s.Password, s.Host)); err != nil {
			return fmt.Errorf("authenticate as %s: %w", s.User, err)
		}
	}
	return nil
}

// Send delivers one composed message from from to to. It gives up when
// ctx ends.
func (s Server) Send(ctx context.Context, from, to string, msg []byte) error {
	c, done, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer done()
	if err := c.Mail(from); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// Permanent reports whether a failed delivery will fail again however
// often it is tried: the server refused it with a 5xx reply, or it is not
// on loopback and offers no STARTTLS. Other failures (4xx replies,
// connection and TLS errors) are temporary.
func Permanent(err error) bool {
	var reply *textproto.Error
	if errors.As(err, &reply) {
		return reply.Code >= 500
	}
	return errors.Is(err, ErrNoStartTLS)
}
