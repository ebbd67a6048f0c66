package server_test

import (
	"net/http"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestProbesFollowTheStore: /readyz answers 200 while the store answers
// reads and 503 store_unavailable once it cannot, on both listeners and
// without credentials; /livez and /healthz answer 200 throughout.
func TestProbesFollowTheStore(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, servertest.Options{})
	get := func(via, path string) (*http.Response, []byte) {
		return send(t, h, call{via: via, method: http.MethodGet, path: path})
	}
	for _, via := range []string{viaSocket, viaNoToken} {
		for _, path := range []string{api.PathLive, api.PathReady, api.PathHealth} {
			if resp, body := get(via, path); resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
				t.Errorf("%s on %s with the store up = %d %q", path, via, resp.StatusCode, body)
			}
		}
	}
	if err := h.Store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{viaSocket, viaNoToken} {
		resp, body := get(via, api.PathReady)
		wantProblem(t, resp, body, http.StatusServiceUnavailable, engine.CodeStoreUnavailable)
		for _, path := range []string{api.PathLive, api.PathHealth} {
			if resp, body := get(via, path); resp.StatusCode != http.StatusOK {
				t.Errorf("%s on %s with the store down = %d %q", path, via, resp.StatusCode, body)
			}
		}
	}
}
