package mailtest_test

import (
	"net/smtp"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/mail/mailtest"
)

func send(addr, subject string) error {
	return smtp.SendMail(addr, nil, "a@example.org", []string{"b@example.org"},
		[]byte("Subject: "+subject+"\r\n\r\nbody\r\n"))
}

// TestStallHoldsTheReply: with --stall 1 the sink stores the first
// message and keeps its sender waiting for the reply, while a later
// message is answered at once; Release sends the held reply.
func TestStallHoldsTheReply(t *testing.T) {
	s := mailtest.Start(t, "--stall", "1")
	held := make(chan error, 1)
	go func() { held <- send(s.Addr, "first") }()
	s.Wait(t, 1)
	if err := send(s.Addr, "second"); err != nil {
		t.Fatalf("the second message: %v", err)
	}
	// The second message's whole session came after the first was
	// stored: a reply to the first would have reached its sender first.
	select {
	case err := <-held:
		t.Fatalf("the first message was answered (%v) though --stall holds its reply", err)
	default:
	}
	if n := len(s.Messages(t)); n != 2 {
		t.Errorf("%d messages stored, want 2", n)
	}
	s.Release(t)
	select {
	case err := <-held:
		if err != nil {
			t.Errorf("the released message: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held reply did not come after Release")
	}
}
