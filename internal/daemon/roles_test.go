package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/cli"
)

// roleEnv makes the test binary play another program instead of running
// tests (see runRole), so that a test can run it as another user: its
// copy sits where that user can run it.
const roleEnv = "RESERVE_TEST_ROLE"

// The roles of the test binary.
const (
	roleReservectl = "reservectl" // reservectl itself, with the arguments given.
	roleRequest    = "request"    // One raw API request (rawRequest) on the socket.
)

// rawRequest is one request that roleRequest sends on a Unix socket, as
// JSON in its only argument, and rawAnswer what it prints of the answer.
type rawRequest struct {
	Socket string `json:"socket"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Key    string `json:"key,omitempty"`
	Body   string `json:"body,omitempty"`
}

type rawAnswer struct {
	Status     int    `json:"status"`
	Replayed   string `json:"replayed"`
	RetryAfter string `json:"retry_after"`
	Body       string `json:"body"`
}

// runRole plays role and returns the exit code.
func runRole(role string) int {
	switch role {
	case roleReservectl:
		return cli.Main()
	case roleRequest:
		if err := sendRaw(os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s=%q names no role\n", roleEnv, role)
	return 2
}

// sendRaw sends the request described by the JSON in arg, over a
// connection of its own, and prints the answer as a rawAnswer.
func sendRaw(arg string) error {
	var rq rawRequest
	if err := json.Unmarshal([]byte(arg), &rq); err != nil {
		return err
	}
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", rq.Socket)
	}}}
	req, err := http.NewRequest(rq.Method, "http://reserved"+rq.Path, strings.NewReader(rq.Body))
	if err != nil {
		return err
	}
	if rq.Body != "" {
		req.Header.Set("Content-Type", api.MediaJSON)
	}
	if rq.Key != "" {
		req.Header.Set(api.HeaderIdempotencyKey, rq.Key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rawAnswer{Status: resp.StatusCode, Replayed: resp.Header.Get("Idempotent-Replayed"),
		RetryAfter: resp.Header.Get("Retry-After"), Body: strings.TrimSpace(string(body))})
}
