package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/server/servertest"
)

// TestPutMe: a caller changes its own profile only, whoami answers it, a
// member left out stays, and a bad member is 422 naming it with nothing
// stored.
func TestPutMe(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	put := func(via, body string) (*http.Response, []byte) {
		return send(t, h, call{via: via, method: http.MethodPut, path: api.PathMe, header: http.Header{"Content-Type": {api.MediaJSON}}, body: body})
	}
	whoami := func(via string) map[string]any {
		t.Helper()
		resp, body := send(t, h, call{via: via, method: http.MethodGet, path: api.PathWhoAmI})
		var out map[string]any
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
			t.Fatalf("whoami = %d %s", resp.StatusCode, body)
		}
		return out
	}
	resp, body := put(h.Alice, `{"display_name":"Alice Liddell","language":"de"}`)
	var p engine.Profile
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &p) != nil || p != (engine.Profile{Actor: "alice", DisplayName: "Alice Liddell", Language: "de"}) {
		t.Fatalf("PUT /api/v1/me = %d %s", resp.StatusCode, body)
	}
	if resp, body = put(h.Alice, `{"language":"en"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT language = %d %s", resp.StatusCode, body)
	}
	if got := whoami(h.Alice); got["display_name"] != "Alice Liddell" || got["language"] != "en" || got["actor"] != "alice" {
		t.Errorf("whoami of alice = %v", got)
	}
	if got := whoami(h.Admin); got["display_name"] != nil || got["language"] != nil {
		t.Errorf("whoami of another actor = %v, want no profile", got)
	}
	for body, member := range map[string]string{
		`{"language":"fr"}`:           "language",
		`{"display_name":"a\u0007b"}`: "display_name",
		`{"display_name":7}`:          "display_name",
		`{"nickname":"x"}`:            "nickname",
	} {
		resp, data := put(h.Alice, body)
		wantProblem(t, resp, data, http.StatusUnprocessableEntity, engine.CodeRequestContract)
		var pr api.Problem
		if json.Unmarshal(data, &pr) != nil || !strings.Contains(pr.Detail, `"`+member+`"`) {
			t.Errorf("PUT %s: detail %q does not name %q", body, pr.Detail, member)
		}
	}
	if got := whoami(h.Alice); got["display_name"] != "Alice Liddell" || got["language"] != "en" {
		t.Errorf("whoami after the refusals = %v, want it unchanged", got)
	}
}
