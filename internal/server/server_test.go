package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/peercred"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

func TestEveryCodeHasAStatus(t *testing.T) {
	for _, code := range api.Codes {
		if got := server.StatusOf(code); got == http.StatusInternalServerError && code != engine.CodeInternal {
			t.Errorf("StatusOf(%s) = 500: the code is missing from the status table", code)
		}
	}
	if got := server.StatusOf("no_such_code"); got != http.StatusInternalServerError {
		t.Errorf("StatusOf(unknown) = %d, want 500", got)
	}
}

// TestSocketActorName names a uid seen for the first time: unix-<name>
// when the user database names it with a name that makes an actor name,
// uid-<n> when it has no such user or a name that makes none, and
// identity_unavailable (with the cause for the log) when the lookup fails
// any other way.
func TestSocketActorName(t *testing.T) {
	down := errors.New("ldap: server unreachable")
	names := map[uint32]string{0: "root", 1000: "alice", 1001: "Bob.Smith", 1002: strings.Repeat("x", 36), 1003: strings.Repeat("x", 37)}
	lookup := func(uid uint32) (string, error) {
		if uid == 5000 {
			return "", down
		}
		if n, ok := names[uid]; ok {
			return n, nil
		}
		return "", user.UnknownUserIdError(int(uid))
	}
	for _, tt := range []struct {
		uid  uint32
		want string
	}{
		{0, "unix-root"},
		{1000, "unix-alice"},
		{1001, "uid-1001"},                        // Not a valid actor name.
		{1002, "unix-" + strings.Repeat("x", 36)}, // The longest actor name.
		{1003, "uid-1003"},                        // Too long with the prefix.
		{4242, "uid-4242"},                        // No such user.
	} {
		if got, err := server.SocketActorName(tt.uid, lookup); got != tt.want || err != nil {
			t.Errorf("SocketActorName(%d) = %q, %v; want %q", tt.uid, got, err, tt.want)
		}
	}
	got, err := server.SocketActorName(5000, lookup)
	if got != "" || engine.ErrorCode(err) != engine.CodeIdentityUnavailable || !errors.Is(err, down) || strings.Contains(engine.ErrorMessage(err), down.Error()) {
		t.Errorf("SocketActorName with a failing user database = %q, %v; want %s, the cause in the chain but not in the message", got, err, engine.CodeIdentityUnavailable)
	}
}

func TestHealthAndIdentity(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	wantSocket := engine.Principal{Actor: "uid-" + strconv.Itoa(os.Getuid()), Admin: true}

	for _, via := range []string{viaSocket, viaNoToken} {
		resp, body := send(t, h, call{via: via, method: http.MethodGet, path: "/healthz"})
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Errorf("healthz via %s = %d %q", via, resp.StatusCode, body)
		}
	}

	resp, body := send(t, h, call{via: viaSocket, method: http.MethodGet, path: api.PathWhoAmI})
	var who engine.Principal
	if err := json.Unmarshal(body, &who); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("whoami on socket = %d %s", resp.StatusCode, body)
	}
	if who.Admin != wantSocket.Admin || !(strings.HasPrefix(who.Actor, "unix-") || who.Actor == wantSocket.Actor) {
		t.Errorf("whoami on socket = %+v, want an admin unix-<name> or %s", who, wantSocket.Actor)
	}
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI})
	if resp.StatusCode != http.StatusOK || string(body) != `{"actor":"alice","admin":false}`+"\n" {
		t.Errorf("whoami as alice = %d %s", resp.StatusCode, body)
	}

	t.Run("NoToken", func(t *testing.T) {
		resp, body := send(t, h, call{via: viaNoToken, method: http.MethodGet, path: api.PathWhoAmI})
		wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
		if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("BadToken", func(t *testing.T) {
		resp, body := send(t, h, call{via: "rsv_" + strings.Repeat("A", 43), method: http.MethodGet, path: api.PathWhoAmI})
		wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
		resp, body = send(t, h, call{via: "not-a-token", method: http.MethodGet, path: api.PathWorkshops})
		wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
	})
	t.Run("NotBearer", func(t *testing.T) {
		resp, body := send(t, h, call{via: viaNoToken, method: http.MethodGet, path: api.PathWhoAmI, header: http.Header{"Authorization": {"Basic " + h.Alice}}})
		wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
	})
	t.Run("OriginOnSocket", func(t *testing.T) {
		for _, path := range []string{"/healthz", api.PathWhoAmI, api.PathWorkshops} {
			resp, body := send(t, h, call{via: viaSocket, method: http.MethodGet, path: path, header: http.Header{"Origin": {"http://evil.example"}}})
			wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
		}
	})
	t.Run("ForeignHostOnTCP", func(t *testing.T) {
		for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.nip.io"} {
			resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI, header: http.Header{"Host": {host}}})
			wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
		}
		for _, host := range []string{"localhost", "localhost:8080", "127.0.0.2", "[::1]:80", "app.localhost"} {
			if resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI, header: http.Header{"Host": {host}}}); resp.StatusCode != http.StatusOK {
				t.Errorf("Host %s = %d %s, want 200", host, resp.StatusCode, body)
			}
		}
	})
	t.Run("AllowedHost", func(t *testing.T) {
		h := servertest.Start(t, servertest.Options{AllowedHosts: []string{"reserve.example"}})
		resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI, header: http.Header{"Host": {"Reserve.Example:8080"}}})
		if resp.StatusCode != http.StatusOK {
			t.Errorf("allowed host = %d %s", resp.StatusCode, body)
		}
	})
}

func TestWorkshops(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWorkshops})
	var list api.WorkshopList
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK || len(list.Workshops) != 1 {
		t.Fatalf("list = %d %s", resp.StatusCode, body)
	}
	if w := list.Workshops[0]; w.ID != servertest.Workshop || w.Capacity != 3 || w.Available != 3 || w.MaxQuantity != 2 || w.Version != 1 {
		t.Errorf("listed workshop = %+v", w)
	}

	resp, body = send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.WorkshopPath(servertest.Workshop)})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != `"1"` {
		t.Errorf("get = %d %s, ETag %q", resp.StatusCode, body, resp.Header.Get("ETag"))
	}
	resp, body = send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.WorkshopPath("no-such-workshop")})
	wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownWorkshop)

	put := func(via, id, ifMatch, body string) (*http.Response, []byte) {
		c := call{via: via, method: http.MethodPut, path: api.WorkshopPath(id), body: body, header: http.Header{}}
		if ifMatch != "" {
			c.header.Set("If-Match", ifMatch)
		}
		return send(t, h, c)
	}
	resp, body = put(h.Alice, "go-basics", "", `{"capacity":5}`)
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	resp, body = put(viaNoToken, "go-basics", "", `{"capacity":5}`)
	wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)

	resp, body = put(h.Admin, "go-basics", "", `{"capacity":5,"max_quantity":2,"title":"Go basics"}`)
	var w engine.Workshop
	if err := json.Unmarshal(body, &w); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Location") != "/api/v1/workshops/go-basics" || resp.Header.Get("ETag") != `"1"` || w.Title != "Go basics" || w.Available != 5 {
		t.Errorf("create = %+v, Location %q, ETag %q", w, resp.Header.Get("Location"), resp.Header.Get("ETag"))
	}
	resp, body = put(viaSocket, "go-basics", `"1"`, `{"capacity":6}`)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"capacity":6`)) || resp.Header.Get("ETag") != `"2"` {
		t.Errorf("update on the socket = %d %s", resp.StatusCode, body)
	}
	resp, body = put(h.Admin, "go-basics", `"1"`, `{"capacity":7}`)
	wantProblem(t, resp, body, http.StatusPreconditionFailed, engine.CodeVersionMismatch)
	resp, body = put(h.Admin, "go-basics", `W/"2"`, `{"capacity":7}`)
	wantProblem(t, resp, body, http.StatusPreconditionFailed, engine.CodeVersionMismatch)
	resp, body = put(h.Admin, "new-one", `"1"`, `{"capacity":7}`)
	wantProblem(t, resp, body, http.StatusPreconditionFailed, engine.CodeVersionMismatch)
	resp, body = put(h.Admin, "Bad_ID", "", `{"capacity":7}`)
	wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	resp, body = put(h.Admin, "go-basics", "", `{"capacity":"7"}`)
	wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	resp, body = send(t, h, call{via: h.Admin, method: http.MethodPut, path: api.WorkshopPath("go-basics"), body: `{"capacity":7}`, header: http.Header{"Content-Type": {"text/plain"}}})
	wantProblem(t, resp, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)

	status, _, _, err := h.TCPClient(h.Alice).Reserve(context.Background(), engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "go-basics", Quantity: 2})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("reserve = %d %v", status, err)
	}
	resp, body = put(h.Admin, "go-basics", "", `{"capacity":1}`)
	wantProblem(t, resp, body, http.StatusConflict, engine.CodeCapacityBelowReserved)
	h.MustCheckClean(t)
}

// TestHiddenWorkshops: "hidden" in a workshop's PUT body hides it from the
// list, which shows it again with include_hidden=true; the workshop's own
// answers name the flag only when it is set; bad values are refused.
func TestHiddenWorkshops(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	listed := func(query string) string {
		t.Helper()
		resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWorkshops + query})
		var list api.WorkshopList
		if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("list%s = %d %s", query, resp.StatusCode, body)
		}
		var ids []string
		for _, w := range list.Workshops {
			ids = append(ids, w.ID)
		}
		return strings.Join(ids, " ")
	}
	put := func(body string) (*http.Response, []byte) {
		return send(t, h, call{via: h.Admin, method: http.MethodPut, path: api.WorkshopPath("bench-1"), body: body})
	}
	resp, body := put(`{"capacity":5,"hidden":true}`)
	if resp.StatusCode != http.StatusCreated || !bytes.Contains(body, []byte(`"version":1,"hidden":true}`)) {
		t.Fatalf("create hidden = %d %s", resp.StatusCode, body)
	}
	if got := listed(""); got != servertest.Workshop {
		t.Errorf("listed = %q, want only %s", got, servertest.Workshop)
	}
	if got := listed("?include_hidden=false"); got != servertest.Workshop {
		t.Errorf("listed with include_hidden=false = %q", got)
	}
	if got := listed("?include_hidden=true"); got != "bench-1 "+servertest.Workshop {
		t.Errorf("listed with include_hidden=true = %q", got)
	}
	resp, body = send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.WorkshopPath("bench-1")})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"hidden":true`)) {
		t.Errorf("get hidden = %d %s", resp.StatusCode, body)
	}
	for _, bad := range []string{"?include_hidden=yes", "?include_hidden=1", "?include_hidden=true&include_hidden=true", "?hidden=true"} {
		resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathWorkshops + bad})
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	}
	for _, bad := range []string{`{"capacity":5,"hidden":"true"}`, `{"capacity":5,"hidden":1}`, `{"capacity":5,"hidden":null}`} {
		resp, body := put(bad)
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	}
	resp, body = put(`{"capacity":5,"hidden":false}`)
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`hidden`)) {
		t.Errorf("list it again = %d %s", resp.StatusCode, body)
	}
	if got := listed(""); got != "bench-1 "+servertest.Workshop {
		t.Errorf("listed after listing it again = %q", got)
	}
	h.MustCheckClean(t)
}

func TestReservations(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	key := uuid.NewString()
	first, firstBody := send(t, h, reservationCall(h.Alice, key, `{"workshop":"workshop-demo","quantity":2}`))
	var a engine.Answer
	if err := json.Unmarshal(firstBody, &a); err != nil || first.StatusCode != http.StatusCreated || a.Status != engine.StatusReserved || !engine.IsReservationID(a.ReservationID) {
		t.Fatalf("first = %d %s", first.StatusCode, firstBody)
	}
	if first.Header.Get(api.HeaderReplayed) != "false" || first.Header.Get("Location") != api.ReservationPath(a.ReservationID) || first.Header.Get("Content-Type") != api.MediaJSON {
		t.Errorf("first answer headers = %v", first.Header)
	}

	t.Run("ReplayIsByteIdentical", func(t *testing.T) {
		// Member order, white space and the structured-field form of the
		// key do not make a different request.
		for _, c := range []call{
			reservationCall(h.Alice, key, `{"workshop":"workshop-demo","quantity":2}`),
			reservationCall(h.Alice, `"`+key+`"`, " {\"quantity\": 2,\n \"workshop\": \"workshop-demo\"} \n"),
		} {
			resp, body := send(t, h, c)
			if resp.StatusCode != http.StatusCreated || !bytes.Equal(body, firstBody) || resp.Header.Get(api.HeaderReplayed) != "true" || resp.Header.Get("Location") != first.Header.Get("Location") {
				t.Errorf("replay = %d %s %v", resp.StatusCode, body, resp.Header)
			}
		}
	})
	t.Run("OtherPayloadConflicts", func(t *testing.T) {
		resp, body := send(t, h, reservationCall(h.Alice, key, `{"workshop":"workshop-demo","quantity":1}`))
		wantProblem(t, resp, body, http.StatusConflict, engine.CodeOperationConflict)
		if resp.Header.Get(api.HeaderReplayed) != "false" {
			t.Errorf("conflict Idempotent-Replayed = %q", resp.Header.Get(api.HeaderReplayed))
		}
	})
	t.Run("KeysBelongToActors", func(t *testing.T) {
		resp, body := send(t, h, call{via: h.Bob, method: http.MethodGet, path: api.PathOperations + "/" + key})
		wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownOperation)
		resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathOperations + "/" + key})
		var op api.OperationView
		if err := json.Unmarshal(body, &op); err != nil || resp.StatusCode != http.StatusOK || op.HTTPStatus != 201 || !bytes.Equal(op.Response, firstBody) || string(op.Operation) != key {
			t.Errorf("own operation = %d %s", resp.StatusCode, body)
		}
		resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathOperations + "/" + uuid.NewString()})
		wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownOperation)
		resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathOperations + "/" + strings.ToUpper(key)})
		wantProblem(t, resp, body, http.StatusBadRequest, engine.CodeInvalidIdempotencyKey)
		// The key comes from the path, and the refusal says so, not that
		// a header is wrong; the quotes a header may add are no key here.
		for _, bad := range []string{"nope", `"` + key + `"`} {
			resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathOperations + "/" + url.PathEscape(bad)})
			wantProblem(t, resp, body, http.StatusBadRequest, engine.CodeInvalidIdempotencyKey)
			if !strings.Contains(string(body), "in the path is not a lowercase canonical UUIDv4") || strings.Contains(string(body), "Idempotency-Key") {
				t.Errorf("GET /api/v1/operations/%s: %s", bad, body)
			}
		}
	})
	t.Run("ReservationVisibility", func(t *testing.T) {
		path := api.ReservationPath(a.ReservationID)
		for _, via := range []string{h.Alice, h.Admin, viaSocket} {
			resp, body := send(t, h, call{via: via, method: http.MethodGet, path: path})
			var r engine.Reservation
			if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != http.StatusOK || r.Actor != "alice" || r.Quantity != 2 {
				t.Errorf("reservation for %s = %d %s", via, resp.StatusCode, body)
			}
		}
		for _, p := range []string{path, api.ReservationPath("0123"), api.ReservationPath(strings.Repeat("0", 32))} {
			resp, body := send(t, h, call{via: h.Bob, method: http.MethodGet, path: p})
			wantProblem(t, resp, body, http.StatusNotFound, engine.CodeUnknownReservation)
		}
	})
	t.Run("UnavailableIsStoredAndReplayed", func(t *testing.T) {
		k := uuid.NewString()
		resp, body := send(t, h, reservationCall(h.Bob, k, `{"workshop":"workshop-demo","quantity":2}`))
		if resp.StatusCode != http.StatusConflict || string(body) != `{"status":"unavailable","workshop":"workshop-demo","quantity":2}` || resp.Header.Get(api.HeaderReplayed) != "false" || resp.Header.Get("Location") != "" {
			t.Fatalf("unavailable = %d %s %v", resp.StatusCode, body, resp.Header)
		}
		again, againBody := send(t, h, reservationCall(h.Bob, k, `{"workshop":"workshop-demo","quantity":2}`))
		if again.StatusCode != http.StatusConflict || !bytes.Equal(againBody, body) || again.Header.Get(api.HeaderReplayed) != "true" {
			t.Errorf("unavailable replay = %d %s %v", again.StatusCode, againBody, again.Header)
		}
	})
	h.MustCheckClean(t)
}

func TestTokens(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	tok := func(via, body string) (*http.Response, []byte) {
		return send(t, h, call{via: via, method: http.MethodPost, path: api.PathTokens, body: body})
	}
	resp, body := tok(viaSocket, `{"actor":"carol"}`)
	var tr api.TokenResponse
	if err := json.Unmarshal(body, &tr); err != nil || resp.StatusCode != http.StatusCreated || tr.Actor != "carol" || tr.Admin || !strings.HasPrefix(tr.Token, engine.TokenPrefix) {
		t.Fatalf("create token = %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("token answer Cache-Control = %q", resp.Header.Get("Cache-Control"))
	}
	if who, err := h.TCPClient(tr.Token).WhoAmI(context.Background()); err != nil || who != (engine.Principal{Actor: "carol"}) {
		t.Errorf("whoami with the new token = %+v %v", who, err)
	}
	resp, body = tok(h.Admin, `{"actor":"dave","admin":true}`)
	if resp.StatusCode != http.StatusCreated || !bytes.Contains(body, []byte(`"admin":true`)) {
		t.Errorf("admin token by an admin = %d %s", resp.StatusCode, body)
	}
	resp, body = tok(h.Alice, `{"actor":"eve"}`)
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	for _, bad := range []string{`{"actor":"Eve"}`, `{"actor":"eve","admin":"yes"}`, `{}`, `{"actor":"eve","x":1}`} {
		resp, body = tok(viaSocket, bad)
		wantProblem(t, resp, body, http.StatusUnprocessableEntity, engine.CodeRequestContract)
	}
	if strings.Contains(h.Logs.String(), tr.Token) || strings.Contains(h.Logs.String(), h.Alice) {
		t.Error("a token appears in the log")
	}
}

func TestUnknownRoutesAreProblems(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	resp, body := send(t, h, call{via: h.Alice, method: http.MethodGet, path: "/api/v1/nothing"})
	wantProblem(t, resp, body, http.StatusNotFound, api.CodeNotFound)
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodDelete, path: api.PathReservations})
	wantProblem(t, resp, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
	if resp.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("Allow = %q", resp.Header.Get("Allow"))
	}
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.CancelPath("0190a1b2c3d4e5f60718293a4b5c6d7e")})
	wantProblem(t, resp, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
	if resp.Header.Get("Allow") != "POST" {
		t.Errorf("Allow = %q", resp.Header.Get("Allow"))
	}
	resp, body = send(t, h, call{via: viaSocket, method: http.MethodPost, path: api.WorkshopPath("x"), body: "{}"})
	wantProblem(t, resp, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
	// Without --enable-fault-injection the fault route does not exist.
	resp, body = send(t, h, call{via: viaSocket, method: http.MethodPost, path: api.PathFaults, body: `{"fault":"garble_response"}`})
	wantProblem(t, resp, body, http.StatusNotFound, api.CodeNotFound)
}

func TestMetrics(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	send(t, h, reservationCall(h.Alice, uuid.NewString(), `{"workshop":"workshop-demo","quantity":1}`))
	send(t, h, call{via: viaNoToken, method: http.MethodGet, path: api.PathWhoAmI})
	send(t, h, batchCall(h.Alice, batchBody(false, [3]any{uuid.NewString(), servertest.Workshop, 1}, [3]any{uuid.NewString(), servertest.Workshop, 1})))

	resp, body := send(t, h, call{via: viaSocket, method: http.MethodGet, path: api.PathMetrics})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics on the socket = %d", resp.StatusCode)
	}
	for _, want := range []string{
		`reserved_http_requests_total{outcome="created",route="POST /api/v1/reservations"} 1`,
		`reserved_http_requests_total{outcome="rejected",route="GET /api/v1/whoami"} 1`,
		`reserved_http_request_duration_seconds_bucket{route="POST /api/v1/reservations",le="+Inf"} 1`,
		`reserved_reservations_per_commit_count`,
		`reserved_http_requests_total{outcome="ok",route="POST /api/v1/batches"} 1`,
		`reserved_batch_items_bucket{le="1"} 0`,
		`reserved_batch_items_bucket{le="10"} 1`,
		`reserved_batches_per_commit_sum 1`,
		`go_goroutines`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	resp, body = send(t, h, call{via: h.Alice, method: http.MethodGet, path: api.PathMetrics})
	wantProblem(t, resp, body, http.StatusForbidden, engine.CodeForbidden)
	resp, body = send(t, h, call{via: viaNoToken, method: http.MethodGet, path: api.PathMetrics})
	wantProblem(t, resp, body, http.StatusUnauthorized, engine.CodeUnauthenticated)
	if resp, _ := send(t, h, call{via: h.Admin, method: http.MethodGet, path: api.PathMetrics}); resp.StatusCode != http.StatusOK {
		t.Errorf("metrics for an admin on TCP = %d", resp.StatusCode)
	}
}

func TestRequestLog(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	key := uuid.NewString()
	body := `{"workshop":"workshop-demo","quantity":1}`
	send(t, h, reservationCall(h.Alice, key, body))
	send(t, h, reservationCall(h.Alice, key, body))
	send(t, h, reservationCall(h.Alice, key, `{"workshop":"workshop-demo","quantity":2}`))
	send(t, h, reservationCall(h.Alice, "bad", body))
	recs, err := h.Logs.Records()
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, r := range recs {
		if r["msg"] != "request" || r["route"] != "POST /api/v1/reservations" {
			continue
		}
		outcomes = append(outcomes, r["outcome"].(string))
		if ms, ok := r["duration_ms"].(float64); r["actor"] != "alice" || r["level"] != "INFO" || !ok || ms < 0 || r["status"] == nil {
			t.Errorf("log line = %v, want actor, level, status and duration_ms, a number of milliseconds", r)
		}
		if _, ok := r["latency"]; ok {
			t.Errorf("log line with a latency in nanoseconds: %v", r)
		}
		if r["outcome"] != "rejected" && r["operation"] != key {
			t.Errorf("log line without the operation key: %v", r)
		}
	}
	if want := []string{"created", "replayed", "conflict", "rejected"}; !slices.Equal(outcomes, want) {
		t.Errorf("logged outcomes = %v, want %v", outcomes, want)
	}
	if strings.Contains(h.Logs.String(), h.Alice) || strings.Contains(h.Logs.String(), "Bearer") {
		t.Error("the log contains a token")
	}
}

// TestRequestID: every answer, a problem too, carries X-Request-Id, and
// the request's log line has the same request_id: the caller's own id
// when it is 1 to 128 printable ASCII characters, else a new one of 16 hex
// digits, a different one for every request.
func TestRequestID(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	made := regexp.MustCompile(`^[0-9a-f]{16}$`)
	long := strings.Repeat("x", api.MaxRequestIDLength)
	seen := map[string]bool{}
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"none", "", false},
		{"a caller's", "req-42 from the proxy", true},
		{"128 characters", long, true},
		{"129 characters", long + "x", false},
		{"a tab", "a\tb", false},
		{"not ASCII", "café", false},
	} {
		for _, via := range []string{h.Alice, viaNoToken} {
			c := call{via: via, method: http.MethodGet, path: api.PathWhoAmI}
			if tc.sent != "" {
				c.header = http.Header{api.HeaderRequestID: {tc.sent}}
			}
			logged := len(h.Logs.RequestLines(t))
			resp, _ := send(t, h, c)
			id := resp.Header.Get(api.HeaderRequestID)
			switch {
			case tc.kept && id != tc.sent:
				t.Errorf("%s id, answer %d: X-Request-Id %q, want the caller's %q", tc.name, resp.StatusCode, id, tc.sent)
			case !tc.kept && (!made.MatchString(id) || seen[id]):
				t.Errorf("%s id, answer %d: X-Request-Id %q, want a new one of 16 hex digits", tc.name, resp.StatusCode, id)
			}
			seen[id] = true
			lines := h.Logs.RequestLines(t)
			if len(lines) != logged+1 || lines[logged]["request_id"] != id {
				t.Errorf("%s id, answer %d: the log line %v does not have request_id %q", tc.name, resp.StatusCode, lines[len(lines)-1], id)
			}
		}
	}
}

func TestConcurrentSameKeyOverHTTP(t *testing.T) {
	h := servertest.Start(t, servertest.Options{})
	key := engine.OperationKey(uuid.NewString())
	const n = 16
	type result struct {
		status   int
		body     string
		replayed bool
		err      error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var r result
			var body []byte
			r.status, body, r.replayed, r.err = h.TCPClient(h.Alice).Reserve(context.Background(), key, engine.Request{Workshop: servertest.Workshop, Quantity: 1})
			r.body = string(body)
			results[i] = r
		})
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		if r.err != nil || r.status != http.StatusCreated || r.body != results[0].body {
			t.Errorf("concurrent answer = %+v", r)
		}
		if !r.replayed {
			created++
		}
	}
	if reservations, receipts := h.Counts(t); created != 1 || reservations != 1 || receipts != 1 {
		t.Errorf("%d first answers, %d reservations, %d receipts; want 1 each", created, reservations, receipts)
	}
}

// TestInAdminGroup: a socket peer is in an admin group by its primary gid
// or by one of its supplementary groups, and in none without admin groups.
func TestInAdminGroup(t *testing.T) {
	for _, tt := range []struct {
		cred   peercred.Cred
		groups []uint32
		want   bool
	}{
		{peercred.Cred{UID: 1000, GID: 50}, []uint32{50}, true},
		{peercred.Cred{UID: 1000, GID: 1000, Groups: []uint32{27, 50}}, []uint32{50}, true},
		{peercred.Cred{UID: 1000, GID: 1000, Groups: []uint32{27}}, []uint32{50}, false},
		{peercred.Cred{UID: 1000, GID: 0, Groups: []uint32{0}}, nil, false},
	} {
		if got := server.InAdminGroup(tt.cred, tt.groups); got != tt.want {
			t.Errorf("InAdminGroup(%+v, %v) = %v, want %v", tt.cred, tt.groups, got, tt.want)
		}
	}
}
