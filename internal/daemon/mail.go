package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"time"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/delivery"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/mail"
	"github.com/reserve/reserve/internal/server"
)

// mailFlags are the serve flags of outgoing mail and of signing in by
// email links.
type mailFlags struct {
	smtp         string
	passwordFile string
	from         string
	emailSignIn  string
	minBackoff   time.Duration
	holdReminder time.Duration
}

// defaultHoldReminder is how long before the deadline of a hold or an
// offer its reminder is mailed: long enough to come back to a payment
// or a decision left for later, short enough to come when it matters.
// A hold shorter than twice this gets no reminder.
const defaultHoldReminder = time.Hour

func (f *mailFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.smtp, "smtp", "", "send mail through this SMTP server, smtp://[user[:password]@]host[:port] (port 25 by default); STARTTLS is required unless the host is a loopback address; prefer --smtp-password-file to a password in the URL, which other users may see in the process list")
	fs.StringVar(&f.passwordFile, "smtp-password-file", "", "read the SMTP password from the first line of this file (it replaces one in --smtp)")
	fs.StringVar(&f.from, "mail-from", "", "sender address of the daemon's mail, e.g. 'Reserve <reserve@example.org>'")
	fs.StringVar(&f.emailSignIn, "email-sign-in", "off", "who may sign in to the form by a link mailed to them: off, open (any address), or domains:example.org,example.com; needs --smtp, --mail-from and --listen")
	fs.DurationVar(&f.minBackoff, "mail-min-backoff", mail.DefaultMinBackoff, "wait before the first retry of a mail that failed temporarily (a 4xx reply, a connection error); each further retry waits twice as long, up to 5m")
	fs.DurationVar(&f.holdReminder, "mail-hold-reminder", defaultHoldReminder, "mail a person this long before the deadline of their hold or offer a reminder, unless it was confirmed, released or declined by then; a hold shorter than twice this gets none, e.g. --mail-hold-reminder 10m for holds of half an hour; 0 mails none")
}

// mailer is the daemon's running mail: the queue and the sign-in by email
// it serves (nil when off).
type mailer struct {
	queue  *mail.Queue
	signIn *server.EmailSignIn
	server mail.Server
	from   netmail.Address
}

// deliveries returns the channel of the mail deliveries (confirmations,
// cancellations, hold and offer notices), sent by the delivery
// dispatcher through the same mail server; nil when the daemon has no
// mail, which routes no mail deliveries.
func (m *mailer) deliveries(eng *engine.Engine, publicURL string) (delivery.Channel, error) {
	if m == nil {
		return nil, nil
	}
	ch, err := delivery.NewMailChannel(delivery.MailConfig{Sender: m.server, From: m.from,
		PublicURL: publicURL, Holds: eng, Now: failpoint.Clock(time.Now)})
	if err != nil {
		return nil, fmt.Errorf("mail deliveries: %w", err)
	}
	return ch, nil
}

// open checks the mail flags, connects once to the SMTP server and
// returns the mail queue, not yet started (nil without --smtp). A server
// off loopback that offers no STARTTLS refuses the start; one that cannot
// be reached now is only a warning, since mail is retried.
func (f *mailFlags) open(ctx context.Context, logger *slog.Logger, metrics *server.Metrics, tcp bool) (*mailer, error) {
	usage := func(err error) error { return &exitError{code: ExitUsage, err: err} }
	policy, err := server.ParseEmailPolicy(f.emailSignIn)
	if err != nil {
		return nil, usage(err)
	}
	if f.holdReminder < 0 {
		return nil, usage(fmt.Errorf("--mail-hold-reminder must be 0 (no reminders) or positive, not %v", f.holdReminder))
	}
	if f.smtp == "" {
		if policy.Enabled() {
			return nil, usage(errors.New("--email-sign-in needs --smtp and --mail-from: the links go out by mail"))
		}
		if f.from != "" || f.passwordFile != "" {
			return nil, usage(errors.New("--mail-from and --smtp-password-file need --smtp"))
		}
		return nil, nil
	}
	if f.minBackoff <= 0 {
		return nil, usage(fmt.Errorf("--mail-min-backoff must be positive, not %v", f.minBackoff))
	}
	srv, err := mail.ParseURL(f.smtp, f.passwordFile)
	if err != nil {
		return nil, usage(err)
	}
	if f.from == "" {
		return nil, usage(errors.New("--smtp needs --mail-from, the sender address of the mail"))
	}
	from, err := netmail.ParseAddress(f.from)
	if err != nil {
		return nil, usage(fmt.Errorf("--mail-from %q is not a mail address such as 'Reserve <reserve@example.org>': %w", f.from, err))
	}
	if policy.Enabled() && !tcp {
		return nil, usage(errors.New("--email-sign-in needs a TCP listener (--listen): the links lead to the form there"))
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch err := srv.Check(cctx); {
	case errors.Is(err, mail.ErrNoStartTLS):
		return nil, usage(fmt.Errorf("--smtp %s: %w; configure STARTTLS on the mail server, or relay through one on this machine (smtp://127.0.0.1)", srv, err))
	case err != nil:
		logger.Warn("the mail server cannot be reached now; mail is queued and retried", "smtp", srv.String(), "error", err)
	}
	q := mail.NewQueue(mail.QueueConfig{Sender: srv, Logger: logger, MinBackoff: f.minBackoff})
	if err := metrics.Register(q.Collectors()...); err != nil {
		return nil, fmt.Errorf("mail metrics: %w", err)
	}
	m := &mailer{queue: q, server: srv, from: *from}
	if policy.Enabled() {
		m.signIn = &server.EmailSignIn{Policy: policy, Mailer: q, From: *from}
	}
	logger.Info("sending mail", "smtp", srv.String(), "mail_from", from.String(), "email_sign_in", f.emailSignIn, "mail_hold_reminder", f.holdReminder)
	return m, nil
}
