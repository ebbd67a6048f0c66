package daemon_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/mail/mailtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// startMailDaemon runs reserved with sign-in by email through the SMTP
// server at smtpURL, plus extra flags.
func startMailDaemon(t *testing.T, smtpURL string, environ []string, extra ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(servertest.ShortTempDir(t), "s.sock")
	args := serveArgs(dir, sock, append([]string{"--smtp", smtpURL, "--mail-from", "Reserve <reserve@example.org>", "--email-sign-in", "domains:example.org", "--mail-min-backoff", "10ms"}, extra...)...)
	p := launch(t, append(env(dir), environ...), args...)
	p.socket = sock
	p.waitServing(t)
	return p
}

// signInByEmail posts a sign-in request and returns the answer.
func signInByEmail(t *testing.T, p *proc, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.url+api.PathSignInEmail, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", api.MediaJSON)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// codeOf returns the code of a login link.
func codeOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("code")
}

// redeem posts a login code for a session and returns the answer.
func redeem(t *testing.T, p *proc, code string) (*http.Response, api.SessionResponse) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.url+api.PathSessions, strings.NewReader(`{"code":"`+code+`"}`))
	req.Header.Set("Content-Type", api.MediaJSON)
	resp, body := do(t, req)
	var s api.SessionResponse
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
	}
	return resp, s
}

// metric returns the value of a sample of the daemon's /metrics, the
// whole line up to the value given (e.g. `reserved_mail_sent_total`).
func metric(t *testing.T, p *proc, sample string) float64 {
	t.Helper()
	resp, body, err := p.socketClient().Do(t.Context(), http.MethodGet, api.PathMetrics, nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %v", err)
	}
	if v, ok := mailtest.Metric(string(body), sample); ok {
		return v
	}
	t.Fatalf("no sample %s in the metrics", sample)
	return 0
}

// TestEmailSignInThroughARealMailServer signs a person in by a link mailed
// through a real SMTP server process: the same 202 for an address that may
// sign in and one that may not, one mail (in German, as Accept-Language
// asked) with Message-ID, Date and both parts; its link opens a session
// of the actor bound to the address once, whoami names the address, and
// the fourth request for an address within 15 minutes is 429 with
// Retry-After.
func TestEmailSignInThroughARealMailServer(t *testing.T) {
	s := mailtest.Start(t)
	p := startMailDaemon(t, "smtp://"+s.Addr, nil)

	resp, known := signInByEmail(t, p, `{"email":"Ada.Lovelace@Example.org"}`, "Accept-Language", "de-DE,de;q=0.9,en;q=0.5")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("sign-in for an allowed address: %d %s", resp.StatusCode, known)
	}
	resp, unknown := signInByEmail(t, p, `{"email":"eve@elsewhere.org"}`)
	if resp.StatusCode != http.StatusAccepted || !bytes.Equal(known, unknown) {
		t.Fatalf("sign-in for an address that may not sign in: %d %s, want 202 and the same body as %s", resp.StatusCode, unknown, known)
	}
	m := mailtest.Parse(t, s.Wait(t, 1)[0])
	if got := m.Header.Get("Delivered-To"); got != "ada.lovelace@example.org" {
		t.Errorf("mail delivered to %q", got)
	}
	if m.Header.Get("X-Sink-TLS") != "false" {
		t.Errorf("mail to a loopback server used TLS: %s", m.Header.Get("X-Sink-TLS"))
	}
	if id := m.Header.Get("Message-ID"); !strings.HasSuffix(id, "@example.org>") {
		t.Errorf("Message-ID %q", id)
	}
	if d, err := m.Header.Date(); err != nil || time.Since(d) > time.Hour || time.Until(d) > time.Hour {
		t.Errorf("Date %q: %v", m.Header.Get("Date"), err)
	}
	if from, err := m.Header.AddressList("From"); err != nil || from[0].Address != "reserve@example.org" || from[0].Name != "Reserve" {
		t.Errorf("From %v, %v", from, err)
	}
	if m.Subject != "Ihr Anmeldelink für Reserve" || m.Header.Get("Content-Language") != "de" {
		t.Errorf("mail in the wrong language: subject %q, Content-Language %q", m.Subject, m.Header.Get("Content-Language"))
	}
	if m.Link == "" || !strings.HasPrefix(m.Link, p.url+"/login?code=") {
		t.Fatalf("no link to %s in the text part:\n%s", p.url, m.Text)
	}
	if !strings.Contains(m.HTML, `href="`+strings.ReplaceAll(m.Link, "&", "&amp;")+`"`) || !strings.Contains(m.HTML, "anzumelden") {
		t.Errorf("the HTML part lacks the link or the German text:\n%s", m.HTML)
	}

	resp, session := redeem(t, p, codeOf(t, m.Link))
	if resp.StatusCode != http.StatusCreated || session.Actor != "ada-lovelace" {
		t.Fatalf("redeeming the mailed link: %d, actor %q; want 201 ada-lovelace", resp.StatusCode, session.Actor)
	}
	req, _ := http.NewRequest(http.MethodGet, p.url+api.PathWhoAmI, nil)
	req.Header.Set("Authorization", "Bearer "+session.Session)
	resp, body := do(t, req)
	var who struct{ Actor, Email string }
	json.Unmarshal(body, &who)
	if resp.StatusCode != http.StatusOK || who.Actor != "ada-lovelace" || who.Email != "ada.lovelace@example.org" {
		t.Errorf("whoami with the session: %d %s", resp.StatusCode, body)
	}
	if resp, _ := redeem(t, p, codeOf(t, m.Link)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second redemption of the link: %d, want 401", resp.StatusCode)
	}

	// The limit per address: two more, then 429.
	for range 2 {
		if resp, body := signInByEmail(t, p, `{"email":"ada.lovelace@example.org","language":"en"}`); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("second or third request: %d %s", resp.StatusCode, body)
		}
	}
	resp, body = signInByEmail(t, p, `{"email":"ada.lovelace@example.org"}`)
	if wait, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || wait < 1 || wait > 900 {
		t.Fatalf("fourth request for the address: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	m = mailtest.Parse(t, s.Wait(t, 3)[2])
	if m.Subject != "Your sign-in link for Reserve" || m.Header.Get("Content-Language") != "en" {
		t.Errorf("the mail asked for in English: subject %q, Content-Language %q", m.Subject, m.Header.Get("Content-Language"))
	}
	servertest.Eventually(t, startTimeout, "the mail queue to empty", func() bool { return metric(t, p, "reserved_mail_queue_length") == 0 })
	if sent := metric(t, p, "reserved_mail_sent_total"); sent != 3 {
		t.Errorf("reserved_mail_sent_total = %v, want 3 (none to the address that may not sign in)", sent)
	}
	if len(s.Messages(t)) != 3 {
		t.Errorf("%d mails in the sink, want 3", len(s.Messages(t)))
	}
}

// TestEmailSignInLimitsAClient: the eleventh request of one client in 15
// minutes is 429, whatever the addresses.
func TestEmailSignInLimitsAClient(t *testing.T) {
	s := mailtest.Start(t)
	p := startMailDaemon(t, "smtp://"+s.Addr, nil)
	for i := range 10 {
		if resp, body := signInByEmail(t, p, `{"email":"person`+strconv.Itoa(i)+`@elsewhere.org"}`); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := signInByEmail(t, p, `{"email":"ada@example.org"}`)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("eleventh request of the client: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestMailRetriedAfterTemporaryRefusal: a mail server that answers 451
// twice and then accepts gets the mail on the third attempt, and the
// daemon logs and counts each failure.
func TestMailRetriedAfterTemporaryRefusal(t *testing.T) {
	s := mailtest.Start(t, "--refuse", "451", "--refuse-count", "2")
	p := startMailDaemon(t, "smtp://"+s.Addr, nil)
	signInByEmail(t, p, `{"email":"ada@example.org"}`)
	m := mailtest.Parse(t, s.Wait(t, 1)[0])
	if m.Link == "" {
		t.Fatal("the retried mail has no link")
	}
	servertest.Eventually(t, startTimeout, "the mail counted as sent", func() bool { return metric(t, p, "reserved_mail_sent_total") == 1 })
	if r := metric(t, p, "reserved_mail_retries_total"); r != 2 {
		t.Errorf("reserved_mail_retries_total = %v, want 2", r)
	}
	if n := strings.Count(p.logs.String(), "mail not sent yet, will retry"); n != 2 {
		t.Errorf("%d retry log lines, want 2:\n%s", n, p.logs)
	}
}

// TestMailGivenUpAfterPermanentRefusal: a 550 is not retried; the mail is
// given up, logged and counted.
func TestMailGivenUpAfterPermanentRefusal(t *testing.T) {
	s := mailtest.Start(t, "--refuse", "550", "--refuse-count", "-1")
	p := startMailDaemon(t, "smtp://"+s.Addr, nil)
	signInByEmail(t, p, `{"email":"ada@example.org"}`)
	servertest.Eventually(t, startTimeout, "the mail given up", func() bool {
		return metric(t, p, `reserved_mail_failed_total{reason="permanent"}`) == 1
	})
	if r := metric(t, p, "reserved_mail_retries_total"); r != 0 {
		t.Errorf("a 550 was retried %v times", r)
	}
	if rec := p.logs.Find("mail given up: the mail server refused it for good"); rec == nil || !strings.Contains(rec["error"].(string), "550") {
		t.Errorf("no log line naming the 550:\n%s", p.logs)
	}
	if n := metric(t, p, "reserved_mail_queue_length"); n != 0 {
		t.Errorf("queue length %v after giving up", n)
	}
}

// TestSMTPAuthPasswordNeverLogged: a password from --smtp-password-file
// authenticates (AUTH PLAIN, allowed in plain text on loopback) and shows
// in no log line; a password in the URL does not either.
func TestSMTPAuthPasswordNeverLogged(t *testing.T) {
	s := mailtest.Start(t, "--user", "reserve", "--password", "s3cret-pw")
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600)
	p := startMailDaemon(t, "smtp://reserve@"+s.Addr, nil, "--smtp-password-file", pwFile)
	signInByEmail(t, p, `{"email":"ada@example.org"}`)
	s.Wait(t, 1)
	q := startMailDaemon(t, "smtp://reserve:s3cret-pw@"+s.Addr, nil)
	signInByEmail(t, q, `{"email":"ada@example.org"}`)
	s.Wait(t, 2)
	for _, d := range []*proc{p, q} {
		if strings.Contains(d.logs.String(), "s3cret-pw") {
			t.Errorf("the SMTP password is in the log:\n%s", d.logs)
		}
		if d.logs.Find("sending mail") == nil {
			t.Errorf("no start line about mail:\n%s", d.logs)
		}
	}
}

// TestMailFlagsRefused: sign-in by email needs a mail server, and a
// bad flag is a usage error that creates nothing.
func TestMailFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--email-sign-in", "open"}, "--email-sign-in needs --smtp"},
		{[]string{"--email-sign-in", "maybe"}, "use off, open, or domains:"},
		{[]string{"--smtp", "smtp://127.0.0.1:1"}, "--smtp needs --mail-from"},
		{[]string{"--smtp", "smtps://u:s3cret-pw@127.0.0.1:1", "--mail-from", "a@example.org"}, "the scheme must be smtp://"},
		{[]string{"--smtp", "smtp://127.0.0.1:1", "--mail-from", "not an address"}, "--mail-from"},
		{[]string{"--mail-from", "a@example.org"}, "need --smtp"},
		{[]string{"--mail-hold-reminder", "-1m"}, "--mail-hold-reminder must be 0 (no reminders) or positive"},
	} {
		dir := t.TempDir()
		p := launch(t, env(dir), serveArgs(dir, filepath.Join(servertest.ShortTempDir(t), "s.sock"), tc.args...)...)
		if code := p.wait(t); code != 2 || !strings.Contains(p.logs.String(), tc.want) || strings.Contains(p.logs.String(), "s3cret-pw") {
			t.Errorf("reserved %v: exit %d, %s; want exit 2 saying %q", tc.args, code, p.logs, tc.want)
		}
		mustNotExist(t, filepath.Join(dir, "reserved.db"))
	}
}

// TestSMTPOffLoopbackNeedsStartTLS: a mail server on an address that is
// not loopback must offer STARTTLS: without it reserved refuses to start
// (and creates nothing); with it the mail goes over TLS, the server's
// certificate checked against the roots SSL_CERT_FILE names.
func TestSMTPOffLoopbackNeedsStartTLS(t *testing.T) {
	ip := nonLoopbackIP(t)
	plain := mailtest.Start(t, "--listen", net.JoinHostPort(ip.String(), "0"))
	dir := t.TempDir()
	args := serveArgs(dir, filepath.Join(servertest.ShortTempDir(t), "s.sock"), "--smtp", "smtp://"+plain.Addr, "--mail-from", "reserve@example.org", "--email-sign-in", "open")
	p := launch(t, env(dir), args...)
	if code := p.wait(t); code != 2 || !strings.Contains(p.logs.String(), "does not offer STARTTLS") {
		t.Fatalf("reserved with a plain mail server off loopback: exit %d, %s; want exit 2 about STARTTLS", code, p.logs)
	}
	mustNotExist(t, filepath.Join(dir, "reserved.db"))

	certFile, keyFile := testCert(t, ip)
	tlsSink := mailtest.Start(t, "--listen", net.JoinHostPort(ip.String(), "0"), "--tls-cert", certFile, "--tls-key", keyFile)
	q := startMailDaemon(t, "smtp://"+tlsSink.Addr, []string{"SSL_CERT_FILE=" + certFile})
	signInByEmail(t, q, `{"email":"ada@example.org"}`)
	m := mailtest.Parse(t, tlsSink.Wait(t, 1)[0])
	if m.Header.Get("X-Sink-TLS") != "true" || m.Link == "" {
		t.Errorf("mail off loopback: X-Sink-TLS %q, link %q", m.Header.Get("X-Sink-TLS"), m.Link)
	}
}

// nonLoopbackIP returns an IPv4 address of this machine that is not
// loopback, or skips the test.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	t.Skip("SKIPPING: this machine has no IPv4 address but loopback, so a mail server off loopback cannot be tried")
	return nil
}

// testCert writes a self-signed certificate for ip and its key, and
// returns their files.
func testCert(t *testing.T, ip net.IP) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "smtpsink test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{ip},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

// TestMailedLinkExpires: a mailed link no longer signs in once the
// daemon's clock has passed its 15 minutes, while one a second younger
// still does. It runs a failpoint build of reserved, whose clock a file shifts.
func TestMailedLinkExpires(t *testing.T) {
	t.Parallel()
	bin, err := failpointBuild()
	if err != nil {
		t.Fatalf("build reserved with failpoints: %v", err)
	}
	s := mailtest.Start(t)
	clock := filepath.Join(t.TempDir(), "clock")
	dir := t.TempDir()
	sock := filepath.Join(servertest.ShortTempDir(t), "s.sock")
	args := serveArgs(dir, sock, "--smtp", "smtp://"+s.Addr, "--mail-from", "reserve@example.org", "--email-sign-in", "open")
	p := launchProgram(t, env(dir, "RESERVED_FAILPOINT_CLOCK="+clock), bin.Reserved, args...)
	p.socket = sock
	p.waitServing(t)
	signInByEmail(t, p, `{"email":"late@example.org"}`)
	m := mailtest.Parse(t, s.Wait(t, 1)[0])
	if err := os.WriteFile(clock, []byte("14m59s"), 0o600); err != nil {
		t.Fatal(err)
	}
	signInByEmail(t, p, `{"email":"early@example.org"}`)
	early := mailtest.Parse(t, s.Wait(t, 2)[1])
	if err := os.WriteFile(clock, []byte("15m"), 0o600); err != nil {
		t.Fatal(err)
	}
	if resp, _ := redeem(t, p, codeOf(t, m.Link)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link 15 minutes old: %d, want 401", resp.StatusCode)
	}
	if resp, s := redeem(t, p, codeOf(t, early.Link)); resp.StatusCode != http.StatusCreated || s.Actor != "early" {
		t.Errorf("a link 1 second old: %d %q, want 201 early", resp.StatusCode, s.Actor)
	}
}
