package server

import (
	"testing"
	"time"
)

func TestLanguageOf(t *testing.T) {
	for _, c := range []struct{ member, header, want string }{
		{"de", "en-US", "de"},
		{"", "de-DE,de;q=0.9,en;q=0.8", "de"},
		{"", "fr-FR,en;q=0.5,de;q=0.7", "de"},
		{"", "fr", "en"},
		{"", "", "en"},
		{"", "EN-gb;q=0.9, de;q=0.1", "en"},
	} {
		if got := languageOf(c.member, c.header); got != c.want {
			t.Errorf("languageOf(%q, %q) = %q, want %q", c.member, c.header, got, c.want)
		}
	}
}

func TestRateLimiterSlides(t *testing.T) {
	l := newRateLimiter(2, 15*time.Minute)
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for i, at := range []time.Duration{0, 5 * time.Minute} {
		if _, ok := l.allow("a", t0.Add(at)); !ok {
			t.Fatalf("event %d refused", i)
		}
	}
	if wait, ok := l.allow("a", t0.Add(10*time.Minute)); ok || wait != 5*time.Minute {
		t.Fatalf("third event in the window: %v, %t; want refused for 5m", wait, ok)
	}
	if _, ok := l.allow("b", t0.Add(10*time.Minute)); !ok {
		t.Fatal("another key was refused")
	}
	if _, ok := l.allow("a", t0.Add(15*time.Minute)); !ok {
		t.Fatal("refused after the first event left the window")
	}
	if _, ok := l.allow("a", t0.Add(16*time.Minute)); ok {
		t.Fatal("allowed a third event within 15 minutes of the second")
	}
	l.allow("c", t0.Add(time.Hour))
	if _, kept := l.hits["a"]; kept {
		t.Error("a key whose events all left the window is still remembered")
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:5000":             "192.0.2.7",
		"[::ffff:192.0.2.7]:1":       "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:80":  "2001:db8:1:2::/64",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseEmailPolicy(t *testing.T) {
	p, err := ParseEmailPolicy("domains:Example.org, b.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !p.allows("ada@example.org") || !p.allows("x@b.example.com") || p.allows("x@c.example.com") || p.allows("x@org") {
		t.Errorf("domains policy allows the wrong addresses: %+v", p)
	}
	if p, _ := ParseEmailPolicy("off"); p.Enabled() {
		t.Error("off is enabled")
	}
	if p, _ := ParseEmailPolicy("open"); !p.allows("anyone@anywhere.example") {
		t.Error("open does not allow an address")
	}
	for _, bad := range []string{"", "on", "domains:", "domains:a@b.org", "domains:nodot"} {
		if _, err := ParseEmailPolicy(bad); err == nil {
			t.Errorf("ParseEmailPolicy(%q) accepted", bad)
		}
	}
}
