package daemon_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/server/servertest"
)

// TestBadRetentionLeavesNothing: a start refused for a flag of the
// background work (a negative receipt retention, delivery backoffs that
// cannot be kept) says why, removes the socket and its directories and,
// being bad input, leaves no database behind: the flags are checked
// before the store is opened.
func TestBadRetentionLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"NegativeRetention", []string{"--receipt-retention", "-1s"}, "--receipt-retention must not be negative"},
		{"ZeroDeliveryBackoff", []string{"--delivery-min-backoff", "0s"}, "--delivery-min-backoff must be positive, not 0s"},
		{"NegativeDeliveryAge", []string{"--delivery-max-age", "-1h"}, "--delivery-max-age must be positive, not -1h0m0s"},
		{"ZeroDeliveryTimeout", []string{"--delivery-timeout", "0s"}, "--delivery-timeout must be positive, not 0s"},
		{"LeaseWithinTimeout", []string{"--delivery-timeout", "10s", "--delivery-lease", "15s"}, "--delivery-lease 15s must exceed --delivery-timeout 10s by more than 5s"},
		{"TraceRatioAboveOne", []string{"--otlp-endpoint", "http://127.0.0.1:4318", "--trace-sample-ratio", "2"}, "--trace-sample-ratio must be between 0 and 1, not 2"},
		{"OTLPEndpointNoURL", []string{"--otlp-endpoint", "127.0.0.1:4318"}, `--otlp-endpoint "127.0.0.1:4318" is not an http or https URL`},
		{"BackoffBeyondAge", []string{"--delivery-min-backoff", "2h", "--delivery-max-age", "1h"}, "--delivery-min-backoff 2h0m0s is longer than --delivery-max-age 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sockDir := filepath.Join(servertest.ShortTempDir(t), "run", "reserved")
			socket := filepath.Join(sockDir, "r.sock")
			db := filepath.Join(dir, "data", "reserved.db")
			p := launch(t, env(dir), append([]string{"serve", "--socket", socket, "--listen", "", "--db", db}, tc.args...)...)
			code := p.wait(t)
			t.Logf("exit %d: %s", code, p.logs)
			if code == 0 {
				t.Fatalf("reserved started: %s", p.logs)
			}
			if !strings.Contains(p.logs.String(), tc.want) {
				t.Errorf("the refusal does not say %q", tc.want)
			}
			mustNotExist(t, socket)
			mustNotExist(t, socket+".lock")
			mustNotExist(t, sockDir)
			mustNotExist(t, db)
		})
	}
}
