package redact_test

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reserve/reserve/internal/redact"
)

func TestDSN(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://reserve:s3cret@db.example:5432/reserve", "postgres://reserve:xxxxx@db.example:5432/reserve"},
		{"postgresql://reserve:s3cret@db.example/reserve?sslmode=require", "postgresql://reserve:xxxxx@db.example/reserve?sslmode=require"},
		{"POSTGRES://u:p@h/d", "POSTGRES://u:xxxxx@h/d"},
		{"postgres://u:p%40ss@h1:5432,h2:5432/d?target_session_attrs=read-write", "postgres://u:xxxxx@h1:5432,h2:5432/d?target_session_attrs=read-write"},
		{"postgres://u:p@ss@h/d", "postgres://u:xxxxx@h/d"},
		{"postgres://u@h/d?password=s3cret&sslmode=disable", "postgres://u@h/d?password=xxxxx&sslmode=disable"},
		{"postgres://u@h/d?sslpassword=s3cret#x", "postgres://u@h/d?sslpassword=xxxxx#x"},
		{"postgres://u@h/d?pass%77ord=s3cret", "postgres://u@h/d?pass%77ord=xxxxx"},
		{"postgres://h/d", "postgres://h/d"},
		{"postgres://u@h/d", "postgres://u@h/d"},
		{"host=db user=reserve password=s3cret dbname=reserve", "host=db user=reserve password=xxxxx dbname=reserve"},
		{"password = 's3 \\' cret' host=db", "password = xxxxx host=db"},
		{"host=db password='s3 cret", "host=db password=xxxxx"},
		{"host=db PASSWORD=s3cret", "host=db PASSWORD=xxxxx"},
		{"host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"host=db my_password=notakey", "host=db my_password=notakey"},
		{"", ""},
	} {
		got := redact.DSN(tc.dsn)
		if got != tc.want {
			t.Errorf("DSN(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "cret'") {
			t.Errorf("DSN(%q) = %q still holds the password", tc.dsn, got)
		}
	}
}

func TestArgs(t *testing.T) {
	args := []string{"reserved", "serve", "--dsn", "postgres://u:s3cret@h/d", "--db", "x", "--to-dsn=password=s3cret host=h", "--listen", "--dsn"}
	want := []string{"reserved", "serve", "--dsn", "postgres://u:xxxxx@h/d", "--db", "x", "--to-dsn=password=xxxxx host=h", "--listen", "--dsn"}
	if got := redact.Args(args); !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if args[3] != "postgres://u:s3cret@h/d" {
		t.Error("Args changed its argument")
	}
	smtp := []string{"reserved", "--smtp", "smtp://u:s3cret@mail.example.org:587", "--smtp=smtp://u:s3c@ret@h"}
	wantSMTP := []string{"reserved", "--smtp", "smtp://u:xxxxx@mail.example.org:587", "--smtp=smtp://u:xxxxx@h"}
	if got := redact.Args(smtp); !slices.Equal(got, wantSMTP) {
		t.Errorf("Args = %q, want %q", got, wantSMTP)
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"smtp://u:s3cret@h:25":     "smtp://u:xxxxx@h:25",
		"smtp://u@h:25":            "smtp://u@h:25",
		"smtp://h":                 "smtp://h",
		"smtp://u:a@b:c@h/x?y=@z":  "smtp://u:xxxxx@h/x?y=@z",
		"smtp://u:s3cret@h:notnum": "smtp://u:xxxxx@h:notnum",
		"not a url":                "not a url",
	} {
		if got := redact.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestErrorOfPgx: the errors pgx gives for connection strings it cannot
// parse quote the string, masking its password only where it can tell it
// apart; through Error none of the password is left, and the reason is.
func TestErrorOfPgx(t *testing.T) {
	for _, tc := range []struct{ dsn, secret, reason string }{
		{"host=h password='s3c ret", "ret", "failed to parse as keyword/value"},
		{"password = s3cret port=abc", "s3cret", "invalid port"},
		{"postgres://u:s3c@ret@h:abc/d", "ret", "invalid port"},
		{"postgres://u:s3cret@h/d%zz", "s3cret", "failed to parse as URL"},
		{"postgres://u@h/d?password=s3cret&connect_timeout=x", "s3cret", "invalid connect_timeout"},
	} {
		_, perr := pgconn.ParseConfig(tc.dsn)
		if perr == nil {
			t.Fatalf("pgx parsed %q", tc.dsn)
		}
		err := redact.Error(perr, tc.dsn)
		if msg := err.Error(); strings.Contains(msg, tc.secret) || !strings.Contains(msg, tc.reason) || !strings.Contains(msg, redact.DSN(tc.dsn)) {
			t.Errorf("Error(pgx's %q) = %q, want it without %q, with %q and the DSN as DSN shows it", perr, msg, tc.secret, tc.reason)
		}
		var pce *pgconn.ParseConfigError
		if !errors.As(err, &pce) {
			t.Errorf("Error(%v) does not wrap it", perr)
		}
	}
}

// TestErrorMasksThePasswordAnywhere: a password of the DSN is masked
// wherever the message holds it, as written or unescaped; a password too
// short to tell from a word is left.
func TestErrorMasksThePasswordAnywhere(t *testing.T) {
	const dsn = "postgres://u:p%40ss-w0rd@h/d"
	err := redact.Error(fmt.Errorf("open %s: server said %s is wrong: %w", dsn, "p@ss-w0rd", fs.ErrPermission), dsn)
	if got, want := err.Error(), "open postgres://u:xxxxx@h/d: server said xxxxx is wrong: permission denied"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Error("Error lost what it wraps")
	}
	if got := redact.Error(errors.New("a b c"), "password=b").Error(); got != "a b c" {
		t.Errorf("a one-letter password was masked: %q", got)
	}
	if redact.Error(nil, "password=secret") != nil {
		t.Error("Error(nil) is not nil")
	}
}
