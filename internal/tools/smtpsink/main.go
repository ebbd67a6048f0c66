// Command smtpsink is an SMTP server for tests: it accepts every message
// and writes it to a maildir-like directory (DIR/tmp, then renamed into
// DIR/new), with Return-Path, Delivered-To and X-Sink-TLS (whether the
// session used STARTTLS) header fields before the message as received.
// With --tls-cert and --tls-key it offers STARTTLS; --refuse makes it
// refuse the first --refuse-count messages at DATA with a reply code, to
// test how a sender handles failures; with --user and --password it
// offers AUTH PLAIN and takes mail only after it. --stall makes it store
// the first --stall messages as usual and then hold its reply to each
// (the sender waits for it, not knowing the message arrived) until the
// sink gets SIGUSR1, which releases them with a 250: a test kills the
// sender meanwhile, after the message reached the sink and before the
// sender learned so. It prints "listening ADDR" on standard output once
// it accepts connections, and serves until killed.
//
// It is a test tool: it imports nothing of reserve.
package main

import (
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "smtpsink:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	dir := flag.String("dir", "", "directory to write messages to (required)")
	cert := flag.String("tls-cert", "", "PEM certificate: offer STARTTLS with it")
	key := flag.String("tls-key", "", "PEM key of --tls-cert")
	refuse := flag.Int("refuse", 0, "reply code (e.g. 451 or 550) to refuse messages with at DATA")
	refuseCount := flag.Int("refuse-count", 1, "how many messages --refuse refuses before accepting (-1: all)")
	user := flag.String("user", "", "offer AUTH PLAIN and accept mail only from this user")
	password := flag.String("password", "", "the password of --user")
	stall := flag.Int("stall", 0, "store the first N messages, then hold the reply to each until the sink gets SIGUSR1")
	flag.Parse()
	if *dir == "" {
		return fmt.Errorf("--dir is required")
	}
	for _, sub := range []string{"tmp", "new"} {
		if err := os.MkdirAll(filepath.Join(*dir, sub), 0o755); err != nil {
			return err
		}
	}
	b := &backend{dir: *dir, refuse: *refuse, refuseAll: *refuseCount < 0, user: *user, password: *password}
	b.refusals.Store(int64(*refuseCount))
	b.stalls.Store(int64(*stall))
	b.release = make(chan struct{})
	released := make(chan os.Signal, 1)
	signal.Notify(released, syscall.SIGUSR1)
	go func() {
		<-released
		close(b.release)
	}()
	s := smtp.NewServer(b)
	s.Domain = "sink.test"
	s.ReadTimeout, s.WriteTimeout = time.Minute, time.Minute
	s.MaxMessageBytes = 1 << 20
	s.MaxRecipients = 10
	s.AllowInsecureAuth = true
	if *cert != "" {
		c, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return err
		}
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{c}}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	return s.Serve(ln)
}

// backend hands out sessions that write to dir.
type backend struct {
	dir       string
	refuse    int
	refuseAll bool
	user      string // Required by AUTH PLAIN when set.
	password  string
	refusals  atomic.Int64 // Refusals left, unless refuseAll.
	seq       atomic.Int64
	stalls    atomic.Int64  // Messages left whose reply is held.
	release   chan struct{} // Closed at SIGUSR1: the held replies go out.
}

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{b: b, conn: c}, nil
}

type session struct {
	b      *backend
	conn   *smtp.Conn
	from   string
	to     []string
	authed bool
}

// AuthMechanisms offers PLAIN when the sink has a user.
func (s *session) AuthMechanisms() []string {
	if s.b.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if user != s.b.user || password != s.b.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad user name or password"}
		}
		s.authed = true
		return nil
	}), nil
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.user != "" && !s.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authenticate first"}
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.b.refuse != 0 && (s.b.refuseAll || s.b.refusals.Add(-1) >= 0) {
		{
			log.Printf("refused a message to %v with %d", s.to, s.b.refuse)
			return &smtp.SMTPError{Code: s.b.refuse, EnhancedCode: smtp.NoEnhancedCode, Message: "refused by smtpsink as told"}
		}
	}
	_, isTLS := s.conn.TLSConnectionState()
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "Return-Path: <%s>\r\n", s.from)
	for _, to := range s.to {
		fmt.Fprintf(&msg, "Delivered-To: %s\r\n", to)
	}
	fmt.Fprintf(&msg, "X-Sink-TLS: %t\r\n", isTLS)
	msg.Write(body)
	name := strconv.FormatInt(time.Now().UnixNano(), 10) + "." + strconv.FormatInt(s.b.seq.Add(1), 10) + ".eml"
	tmp := filepath.Join(s.b.dir, "tmp", name)
	if err := os.WriteFile(tmp, msg.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.b.dir, "new", name)); err != nil {
		return err
	}
	if s.b.stalls.Add(-1) >= 0 {
		log.Printf("stored %s and holds its reply until SIGUSR1", name)
		<-s.b.release
	}
	return nil
}
