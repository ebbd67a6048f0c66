package daemon_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/failpoint"
	"github.com/reserve/reserve/internal/mail/mailtest"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestHoldRemindersFromTheDaemon: a person signed in by email holds two
// places of a workshop for ten minutes each and confirms the second hold
// at once; reserved runs with --mail-hold-reminder 5m, through a real
// SMTP server process. When the daemon's clock reaches 5 minutes before
// the deadlines, the open hold's reminder goes out under the Message-ID
// <event id>.reminder@example.org, while the confirmed hold's is skipped
// as not needed and never sent. The daemon is killed after the mail
// server took the reminder and before the attempt was recorded; started
// again, it sends the reminder again once its claim ran out: the same
// message, under the same Message-ID. Past the deadline the hold's expiry
// mail follows the reminder. It runs a failpoint build of reserved,
// whose clock a file moves and whose kill an HTTP request arms.
func TestHoldRemindersFromTheDaemon(t *testing.T) {
	t.Parallel()
	bin, err := failpointBuild()
	if err != nil {
		t.Fatalf("build reserved with failpoints: %v", err)
	}
	ctx := t.Context()
	s := mailtest.Start(t)
	dir := t.TempDir()
	clock := filepath.Join(t.TempDir(), "clock")
	setClock := func(ahead string) {
		t.Helper()
		if err := os.WriteFile(clock, []byte(ahead), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(servertest.ShortTempDir(t), "s.sock")
	args := serveArgs(dir, sock, "--no-demo", "--smtp", "smtp://"+s.Addr, "--mail-from", "Reserve <reserve@example.org>",
		"--email-sign-in", "domains:example.org", "--mail-hold-reminder", "5m")
	failAddr := freeAddr(t)
	launch := func(extra ...string) *proc {
		t.Helper()
		p := launchProgram(t, env(dir, append([]string{"RESERVED_FAILPOINT_CLOCK=" + clock}, extra...)...), bin.Reserved, args...)
		p.socket = sock
		p.waitServing(t)
		return p
	}
	p := launch("GOFAIL_HTTP=" + failAddr)
	admin := p.socketClient()
	if _, _, err := admin.PutWorkshop(ctx, "kiln", engine.WorkshopSpec{Capacity: 5, MaxQuantity: 2, Title: "Kiln"}, nil); err != nil {
		t.Fatal(err)
	}
	if resp, body := signInByEmail(t, p, `{"email":"ada@example.org"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	resp, session := redeem(t, p, codeOf(t, mailtest.Parse(t, s.Wait(t, 1)[0]).Link))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("redeem: %d", resp.StatusCode)
	}
	ada := &client.Client{BaseURL: p.url, Token: session.Session}
	hold := func() engine.Answer {
		t.Helper()
		res, err := ada.Send(ctx, newOpKey(), client.Holding(engine.HoldRequest{Workshop: "kiln", Quantity: 1, TTLSeconds: 600}))
		if err != nil || res.Answer.Status != engine.StatusHeld {
			t.Fatalf("hold: %+v, %v", res, err)
		}
		return res.Answer
	}
	open, confirmed := hold(), hold()
	if res, err := ada.Send(ctx, newOpKey(), client.Confirming(confirmed.HoldID)); err != nil || res.Answer.Status != engine.StatusReserved {
		t.Fatalf("confirm: %+v, %v", res, err)
	}
	// The two holds' mails and the reservation's are recorded as
	// delivered before the kill is armed, so that the next mail sent is
	// the first that can be the reminder.
	servertest.Eventually(t, time.Minute, "the three mails delivered", func() bool {
		page, err := admin.Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryDelivered, Channel: engine.ChannelMail})
		return err == nil && len(page.Deliveries) == 3
	})
	reminders, err := admin.Deliveries(ctx, engine.DeliveryFilter{Channel: engine.ChannelReminder})
	if err != nil || len(reminders.Deliveries) != 2 {
		t.Fatalf("pending reminders = %+v, %v; want both holds'", reminders, err)
	}
	// Each hold's reminder is due 5 minutes before that hold's deadline;
	// the second hold was asked for after the first, so its deadline is
	// the same or later.
	dues := []engine.Delivery{reminders.Deliveries[0], reminders.Deliveries[1]}
	slices.SortFunc(dues, func(a, b engine.Delivery) int { return a.NextAttemptAt.Compare(b.NextAttemptAt) })
	for i, deadline := range []time.Time{open.ExpiresAt, confirmed.ExpiresAt} {
		d, due := dues[i], deadline.Add(-5*time.Minute)
		if d.NextAttemptAt.Sub(due).Abs() > time.Second || d.Recipient != "ada@example.org" {
			t.Errorf("reminder %+v; want it due 5 minutes before its hold's deadline, at about %s", d, due)
		}
	}
	armFailpoint(t, failAddr, failpoint.DeliveryBeforeFinish, `return("kill")`)
	setClock("301s")
	<-p.done
	if !strings.Contains(p.logs.String(), "failpoint kill: "+failpoint.DeliveryBeforeFinish) {
		t.Fatalf("reserved did not die after sending the reminder:\n%s", p.logs)
	}
	first := mailtest.Parse(t, s.Wait(t, 5)[4])
	if id := first.Header.Get("Message-ID"); !strings.HasSuffix(id, ".reminder@example.org>") || first.Subject != "Your hold ends soon: Kiln" {
		t.Fatalf("the mail sent before the kill: %q, Message-ID %q; want the reminder", first.Subject, id)
	}

	// Started again past the claim's 30 s, the daemon sends it again.
	setClock("340s")
	p = launch()
	admin = p.socketClient()
	servertest.Eventually(t, time.Minute, "the reminder sent again", func() bool { return len(s.Messages(t)) >= 6 })
	msgs := s.Messages(t)
	if again := mailtest.Parse(t, msgs[5]); again.Header.Get("Message-ID") != first.Header.Get("Message-ID") || !bytes.Equal(msgs[4], msgs[5]) {
		t.Fatalf("the reminder sent again is %q (%q), not the same message as the first (%q)", again.Subject, again.Header.Get("Message-ID"), first.Header.Get("Message-ID"))
	}
	servertest.Eventually(t, time.Minute, "the reminders settled", func() bool {
		page, err := admin.Deliveries(ctx, engine.DeliveryFilter{Channel: engine.ChannelReminder})
		return err == nil && len(page.Deliveries) == 0
	})
	delivered, err := admin.Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryDelivered, Channel: engine.ChannelReminder})
	if err != nil || len(delivered.Deliveries) != 1 || delivered.Deliveries[0].Attempts != 2 {
		t.Fatalf("delivered reminders = %+v, %v; want the open hold's, sent twice", delivered, err)
	}
	if want := "<" + delivered.Deliveries[0].EventID + ".reminder@example.org>"; first.Header.Get("Message-ID") != want {
		t.Errorf("the reminder's Message-ID is %q, want %q, made from the hold's event", first.Header.Get("Message-ID"), want)
	}
	for _, want := range []string{"your hold of 1 place in “Kiln” lasts until ", "Hold: " + open.HoldID} {
		if !strings.Contains(first.Text, want) {
			t.Errorf("the reminder does not say %q:\n%s", want, first.Text)
		}
	}
	skipped, err := admin.Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliverySkipped, Channel: engine.ChannelReminder})
	if err != nil || len(skipped.Deliveries) != 1 || !strings.Contains(skipped.Deliveries[0].LastError, "not needed: hold "+confirmed.HoldID+" was confirmed") {
		t.Fatalf("skipped reminders = %+v, %v; want the confirmed hold's, not needed", skipped, err)
	}

	// Past the deadline, the open hold's expiry mail comes after its
	// reminder, and no mail ever reminded of the confirmed hold.
	setClock("605s")
	servertest.Eventually(t, time.Minute, "the expiry mail", func() bool { return len(s.Messages(t)) >= 7 })
	msgs = s.Messages(t)
	if expired := mailtest.Parse(t, msgs[6]); expired.Subject != "Hold expired: Kiln" || !strings.Contains(expired.Text, "Hold: "+open.HoldID) {
		t.Errorf("the mail after the reminder: %q\n%s", expired.Subject, expired.Text)
	}
	reminded := 0
	for _, raw := range msgs {
		m := mailtest.Parse(t, raw)
		if strings.Contains(m.Text, "Hold: "+confirmed.HoldID) && m.Subject != "Places held for you: Kiln" {
			t.Errorf("a mail about the confirmed hold: %q", m.Subject)
		}
		if strings.HasSuffix(m.Header.Get("Message-ID"), ".reminder@example.org>") {
			reminded++
		}
	}
	if reminded != 2 {
		t.Errorf("%d reminders in the mailbox, want the one reminder, twice", reminded)
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
}
