package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
	rmail "github.com/reserve/reserve/internal/mail"
	"github.com/reserve/reserve/internal/server"
	"github.com/reserve/reserve/internal/server/servertest"
)

// traffic sends exchanges through a harness whose clients check each one
// against docs/openapi.yaml, checks the status each one gets, and records
// the statuses every route answered.
type traffic struct {
	t       *testing.T
	h       *servertest.Harness
	openAPI *servertest.OpenAPI
	seen    map[string]map[int]bool // Statuses by route pattern.
}

func newTraffic(t *testing.T, opts servertest.Options) *traffic {
	opts.CheckOpenAPI = true
	return &traffic{t: t, h: servertest.Start(t, opts), openAPI: servertest.LoadOpenAPI(t), seen: map[string]map[int]bool{}}
}

func (tr *traffic) record(route string, status int) {
	if tr.seen[route] == nil {
		tr.seen[route] = map[int]bool{}
	}
	tr.seen[route][status] = true
}

// do sends c, an exchange of route, and checks that it gets want; it
// returns the answer's body.
func (tr *traffic) do(route string, c call, want int) []byte {
	tr.t.Helper()
	resp, body := send(tr.t, tr.h, c)
	if resp.StatusCode != want {
		tr.t.Errorf("%s %s (%s): %d, want %d: %s", c.method, c.path, tr.viaName(c.via), resp.StatusCode, want, body)
	}
	tr.record(route, resp.StatusCode)
	return body
}

func (tr *traffic) viaName(via string) string {
	switch via {
	case viaSocket:
		return "Unix socket"
	case tr.h.Admin:
		return "TCP as the admin"
	case tr.h.Alice:
		return "TCP as alice"
	case viaNoToken:
		return "TCP without a token"
	}
	return "TCP with another credential"
}

// raw writes request, the raw bytes of one request of route, on a new
// connection to the Unix socket or (tcp) the TCP listener, reads the
// answer, checks it against the document and checks that it is want. With
// halfClose the connection's writing side is closed after the request.
func (tr *traffic) raw(route string, tcp bool, request string, halfClose bool, want int) {
	tr.t.Helper()
	network, addr, where := "unix", tr.h.Socket, "Unix socket"
	if tcp {
		network, addr, where = "tcp", tr.h.TCPAddr(), "TCP listener"
	}
	conn, err := net.Dial(network, addr)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // Only ends a hang.
	if _, err := io.WriteString(conn, request); err != nil {
		tr.t.Fatalf("%s on the %s: write: %v", route, where, err)
	}
	if halfClose {
		if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			tr.t.Fatal(err)
		}
	}
	method, target, _ := strings.Cut(strings.SplitN(request, " HTTP/", 2)[0], " ")
	req, err := http.NewRequest(method, "http://localhost"+target, nil)
	if err != nil {
		tr.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		tr.t.Fatalf("%s %s on the %s: no answer: %v", method, target, where, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		tr.t.Fatalf("%s %s on the %s: read the answer: %v", method, target, where, err)
	}
	if resp.StatusCode != want {
		tr.t.Errorf("%s %s on the %s: %d, want %d: %s", method, target, where, resp.StatusCode, want, body)
	}
	if err := tr.openAPI.Check(req, nil, resp, body); err != nil {
		tr.t.Errorf("%s %s on the %s: %d %s departs from docs/openapi.yaml:\n%v", method, target, where, resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	tr.record(route, resp.StatusCode)
}

// jsonCall is a call with a JSON body and, unless key is "", an
// Idempotency-Key.
func jsonCall(via, method, path, key, body string) call {
	hd := http.Header{"Content-Type": {api.MediaJSON}}
	if key != "" {
		hd.Set(api.HeaderIdempotencyKey, key)
	}
	return call{via: via, method: method, path: path, header: hd, body: body}
}

// withHeader returns c with the header fields of kv (name, value, …) added.
func withHeader(c call, kv ...string) call {
	hd := c.header.Clone()
	if hd == nil {
		hd = http.Header{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		hd.Set(kv[i], kv[i+1])
	}
	c.header = hd
	return c
}

// forEachRoute calls f with every route the server registers and its
// sample request (routeSamples, with the reservation and hold ids given);
// a route without a sample fails the test.
func forEachRoute(t *testing.T, reservation, hold string, f func(route string, s struct{ path, body string })) {
	t.Helper()
	samples := routeSamples(reservation, hold)
	for _, route := range server.RoutePatterns() {
		s, ok := samples[route]
		if !ok {
			t.Errorf("route %s has no sample request in routeSamples", route)
			continue
		}
		f(route, s)
	}
}

// routeSamples has, for every route pattern, a path that matches it and
// the body of a well-formed request; the routes missing here make the
// test fail, so that every new route gets checked.
func routeSamples(reservation, hold string) map[string]struct{ path, body string } {
	type sample = struct{ path, body string }
	return map[string]sample{
		"GET /healthz":                             {api.PathHealth, ""},
		"GET /livez":                               {api.PathLive, ""},
		"GET /readyz":                              {api.PathReady, ""},
		"GET /metrics":                             {api.PathMetrics, ""},
		"GET /api/v1/whoami":                       {api.PathWhoAmI, ""},
		"PUT /api/v1/me":                           {api.PathMe, `{"language":"de"}`},
		"GET /api/v1/workshops":                    {api.PathWorkshops, ""},
		"GET /api/v1/workshops/{id}":               {api.WorkshopPath(servertest.Workshop), ""},
		"PUT /api/v1/workshops/{id}":               {api.WorkshopPath(servertest.Workshop), `{"capacity":3,"max_quantity":2,"title":"Demo"}`},
		"PATCH /api/v1/workshops/{id}":             {api.WorkshopPath(servertest.Workshop), `{"title":"Demo","description":null}`},
		"DELETE /api/v1/workshops/{id}":            {api.WorkshopPath("no-such"), ""},
		"GET /api/v1/workshops/{id}/attendees":     {api.AttendeesPath(servertest.Workshop) + "?status=all", ""},
		"POST /api/v1/reservations":                {api.PathReservations, `{"workshop":"workshop-demo","quantity":1}`},
		"POST /api/v1/batches":                     {api.PathBatches, `{"items":[{"key":"` + uuid.NewString() + `","workshop":"workshop-demo","quantity":1}]}`},
		"GET /api/v1/reservations":                 {api.PathReservations + "?status=all&limit=2", ""},
		"GET /api/v1/holds":                        {api.PathHolds + "?status=all", ""},
		"GET /api/v1/operations/{key}":             {api.PathOperations + "/" + uuid.NewString(), ""},
		"GET /api/v1/reservations/{id}":            {api.ReservationPath(reservation), ""},
		"POST /api/v1/reservations/{id}/cancel":    {api.CancelPath(reservation), ""},
		"POST /api/v1/holds":                       {api.PathHolds, holdBody(1, 60)},
		"GET /api/v1/holds/{id}":                   {api.HoldPath(hold), ""},
		"POST /api/v1/holds/{id}/confirm":          {api.ConfirmPath(hold), "{}"},
		"POST /api/v1/holds/{id}/release":          {api.ReleasePath(hold), "{}"},
		"GET /api/v1/waitlist":                     {api.PathWaitlist + "?status=all", ""},
		"POST /api/v1/waitlist/{id}/leave":         {api.WaitlistLeavePath(strings.Repeat("0", 32)), "{}"},
		"GET /api/v1/workshops/{id}/waitlist":      {api.WorkshopWaitlistPath(servertest.Workshop), ""},
		"POST /api/v1/tokens":                      {api.PathTokens, `{"actor":"carol"}`},
		"GET /api/v1/tokens":                       {api.PathTokens, ""},
		"DELETE /api/v1/tokens/{id}":               {api.TokenPath(strings.Repeat("0", 32)), ""},
		"GET /api/v1/admin/backup":                 {api.PathBackup, ""},
		"GET /api/v1/admin/operations":             {api.PathAdminOps, ""},
		"POST /api/v1/admin/webhooks":              {api.PathWebhooks, `{"url":"https://hooks.example/sample"}`},
		"GET /api/v1/admin/webhooks":               {api.PathWebhooks, ""},
		"DELETE /api/v1/admin/webhooks/{id}":       {api.WebhookPath(strings.Repeat("0", 32)), ""},
		"GET /api/v1/admin/deliveries":             {api.PathDeliveries + "?state=failed", ""},
		"POST /api/v1/admin/deliveries/{id}/retry": {api.DeliveryRetryPath(strings.Repeat("0", 32) + "-mail"), "{}"},
		"POST /api/v1/admin/deliveries/{id}/skip":  {api.DeliverySkipPath(strings.Repeat("0", 32) + "-mail"), "{}"},
		"GET /api/v1/openapi.yaml":                 {api.PathOpenAPI, ""},
		"POST /api/v1/debug/faults":                {api.PathFaults, `{"fault":"garble_response","count":1}`},
		"GET /{$}":                                 {"/", ""},
		"GET /app.js":                              {"/app.js", ""},
		"GET /answers.js":                          {"/answers.js", ""},
		"GET /common.js":                           {"/common.js", ""},
		"GET /style.css":                           {"/style.css", ""},
		"GET /favicon.svg":                         {"/favicon.svg", ""},
		"GET /admin":                               {"/admin", ""},
		"GET /admin.js":                            {"/admin.js", ""},
		"GET /admin.css":                           {"/admin.css", ""},
		"GET " + api.PathLogin:                     {api.PathLogin + "?code=rlc_x", ""},
		"POST " + api.PathSessions:                 {api.PathSessions, `{"code":"rlc_x"}`},
		"DELETE " + api.PathCurrentSession:         {api.PathCurrentSession, ""},
		"POST " + api.PathLoginLinks:               {api.PathLoginLinks, ""},
		"GET " + api.PathSignIn:                    {api.PathSignIn, ""},
		"POST " + api.PathSignInEmail:              {api.PathSignInEmail, `{"email":"sample@example.org"}`},
	}
}

// sampleCall is the well-formed request of route: its sample path and
// body, a fresh Idempotency-Key, and a JSON Content-Type with a body.
func sampleCall(via, route, path, body string) call {
	method, _, _ := strings.Cut(route, " ")
	c := call{via: via, method: method, path: path, header: http.Header{api.HeaderIdempotencyKey: {uuid.NewString()}}}
	if body != "" {
		c.header.Set("Content-Type", api.MediaJSON)
		c.body = body
	}
	return c
}

// anyoneRoutes are the routes that need no credentials.
var anyoneRoutes = map[string]bool{
	"GET /healthz": true, "GET /livez": true, "GET /readyz": true, "GET /api/v1/openapi.yaml": true, "GET /{$}": true, "GET /app.js": true, "GET /answers.js": true, "GET /common.js": true, "GET /style.css": true,
	"GET /favicon.svg": true, "GET /admin": true, "GET /admin.js": true, "GET /admin.css": true, "GET " + api.PathLogin: true, "POST " + api.PathSessions: true, "DELETE " + api.PathCurrentSession: true,
	"GET " + api.PathSignIn: true, "POST " + api.PathSignInEmail: true,
}

// adminRoutes are the routes only admins may use on TCP.
var adminRoutes = map[string]bool{
	"GET /metrics": true, "PUT /api/v1/workshops/{id}": true, "PATCH /api/v1/workshops/{id}": true, "DELETE /api/v1/workshops/{id}": true,
	"GET /api/v1/workshops/{id}/attendees": true, "GET /api/v1/workshops/{id}/waitlist": true, "POST /api/v1/tokens": true, "GET /api/v1/tokens": true,
	"DELETE /api/v1/tokens/{id}": true, "GET /api/v1/admin/backup": true,
	"GET /api/v1/admin/operations": true, "POST /api/v1/debug/faults": true,
	"POST /api/v1/admin/webhooks": true, "GET /api/v1/admin/webhooks": true, "DELETE /api/v1/admin/webhooks/{id}": true,
	"GET /api/v1/admin/deliveries": true, "POST /api/v1/admin/deliveries/{id}/retry": true, "POST /api/v1/admin/deliveries/{id}/skip": true,
}

// bodyRoutes are the routes that read a JSON request body.
var bodyRoutes = map[string]bool{
	"PUT /api/v1/workshops/{id}": true, "PATCH /api/v1/workshops/{id}": true, "POST /api/v1/reservations": true, "POST /api/v1/holds": true, "POST /api/v1/holds/{id}/confirm": true,
	"POST /api/v1/holds/{id}/release": true, "POST /api/v1/tokens": true, "POST /api/v1/debug/faults": true, "POST " + api.PathSessions: true,
	"POST " + api.PathSignInEmail: true, "POST /api/v1/admin/webhooks": true, "POST /api/v1/admin/deliveries/{id}/retry": true,
	"POST /api/v1/admin/deliveries/{id}/skip": true, "POST /api/v1/waitlist/{id}/leave": true,
}

// bodyLimit is the most bytes route reads of a request body.
func bodyLimit(route string) int {
	switch route {
	case "PUT /api/v1/workshops/{id}", "PATCH /api/v1/workshops/{id}":
		return api.MaxWorkshopBytes
	case "POST /api/v1/batches":
		return api.MaxBatchBytes
	}
	return api.MaxBodyBytes
}

// TestOpenAPIMatchesTraffic sends a broad black-box suite through the real
// server on both listeners, every route with its successes, replays and
// every problem it can answer, the middleware's refusals included, and
// checks every exchange against docs/openapi.yaml with an outside OpenAPI
// 3.1 validator (servertest.Options.CheckOpenAPI). A failure names the
// request, the status and the validator's findings.
func TestOpenAPIMatchesTraffic(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	mailer := &mailRecorder{}
	tr := newTraffic(t, servertest.Options{FaultInjection: true, Clock: clock.Now, EmailSignIn: &server.EmailSignIn{
		Policy: mustEmailPolicy(t, "domains:example.org"), Mailer: mailer, From: mail.Address{Address: "reserve@example.org"}, PerClient: 1000,
	}})
	h := tr.h
	ctx := t.Context()
	const (
		reservePattern = "POST /api/v1/reservations"
		holdPattern    = "POST /api/v1/holds"
	)
	demo := servertest.Workshop
	reserveBody := func(q int) string { return fmt.Sprintf(`{"workshop":%q,"quantity":%d}`, demo, q) }

	// Anyone's routes, the identity and the metrics.
	for _, via := range []string{viaSocket, h.Alice} {
		tr.do("GET /healthz", call{via: via, method: http.MethodGet, path: api.PathHealth}, http.StatusOK)
		tr.do("GET /livez", call{via: via, method: http.MethodGet, path: api.PathLive}, http.StatusOK)
		tr.do("GET /readyz", call{via: via, method: http.MethodGet, path: api.PathReady}, http.StatusOK)
		tr.do("GET /api/v1/openapi.yaml", call{via: via, method: http.MethodGet, path: api.PathOpenAPI}, http.StatusOK)
		tr.do("GET /api/v1/sign-in", call{via: via, method: http.MethodGet, path: "/api/v1/sign-in"}, http.StatusOK)
		tr.do("GET /api/v1/whoami", call{via: via, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusOK)
		tr.do("GET /api/v1/workshops", call{via: via, method: http.MethodGet, path: api.PathWorkshops}, http.StatusOK)
		tr.do("GET /api/v1/reservations", call{via: via, method: http.MethodGet, path: api.PathReservations + "?status=all&limit=1"}, http.StatusOK)
		tr.do("GET /api/v1/reservations", call{via: via, method: http.MethodGet, path: api.PathReservations + "?status=gone"}, http.StatusUnprocessableEntity)
		tr.do("GET /api/v1/holds", call{via: via, method: http.MethodGet, path: api.PathHolds + "?status=all"}, http.StatusOK)
		tr.do("GET /api/v1/workshops/{id}", call{via: via, method: http.MethodGet, path: api.WorkshopPath(demo)}, http.StatusOK)
		tr.do("GET /api/v1/workshops/{id}", call{via: via, method: http.MethodGet, path: api.WorkshopPath("no-such")}, http.StatusNotFound)
	}
	tr.do("GET /api/v1/whoami", call{via: "rsv_nope", method: http.MethodGet, path: api.PathWhoAmI}, http.StatusUnauthorized)
	tr.do("GET /api/v1/whoami", withHeader(call{via: viaNoToken, method: http.MethodGet, path: api.PathWhoAmI}, "Authorization", "Basic eDp5"), http.StatusUnauthorized)
	me := func(via, body string, want int) {
		tr.do("PUT /api/v1/me", jsonCall(via, http.MethodPut, api.PathMe, "", body), want)
	}
	me(h.Alice, `{"display_name":"Alice A.","language":"de"}`, http.StatusOK)
	me(viaSocket, `{}`, http.StatusOK)
	me(h.Alice, `{"language":"fr"}`, http.StatusUnprocessableEntity)
	me(h.Alice, `{"display_name":"x","extra":1}`, http.StatusUnprocessableEntity)
	tr.do("GET /api/v1/whoami", call{via: h.Alice, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusOK)
	tr.do("GET /metrics", call{via: viaSocket, method: http.MethodGet, path: api.PathMetrics}, http.StatusOK)
	tr.do("GET /metrics", call{via: h.Admin, method: http.MethodGet, path: api.PathMetrics}, http.StatusOK)

	// Workshops.
	put := func(via, id, body string, want int, kv ...string) {
		tr.do("PUT /api/v1/workshops/{id}", withHeader(jsonCall(via, http.MethodPut, api.WorkshopPath(id), "", body), kv...), want)
	}
	put(h.Admin, "go-basics", `{"capacity":5,"title":"Go"}`, http.StatusCreated)
	put(viaSocket, "go-basics", `{"capacity":6,"max_quantity":3,"title":"Go"}`, http.StatusOK, "If-Match", `"1"`)
	put(h.Admin, "go-basics", `{"capacity":6}`, http.StatusPreconditionFailed, "If-Match", `"1"`)
	put(h.Admin, "go-basics", `{"capacity":6}`, http.StatusPreconditionFailed, "If-Match", `1`)
	put(h.Admin, "go-basics", `{"capacity":-1}`, http.StatusUnprocessableEntity)
	put(h.Admin, "Bad_ID", `{"capacity":1}`, http.StatusUnprocessableEntity)
	put(h.Admin, "go-basics", `{"capacity":1}`, http.StatusUnsupportedMediaType, "Content-Type", "text/plain")
	put(h.Admin, "hidden-one", `{"capacity":2,"hidden":true}`, http.StatusCreated)
	put(h.Admin, "hidden-one", `{"capacity":2,"hidden":"yes"}`, http.StatusUnprocessableEntity)
	tr.do("GET /api/v1/workshops", call{via: h.Alice, method: http.MethodGet, path: api.PathWorkshops + "?include_hidden=true"}, http.StatusOK)
	tr.do("GET /api/v1/workshops", call{via: h.Alice, method: http.MethodGet, path: api.PathWorkshops + "?include_hidden=maybe"}, http.StatusUnprocessableEntity)
	tr.do("GET /api/v1/workshops/{id}", call{via: h.Alice, method: http.MethodGet, path: api.WorkshopPath("hidden-one")}, http.StatusOK)
	put(h.Admin, "go-basics", `{"title":"`+strings.Repeat("x", api.MaxWorkshopBytes)+`"}`, http.StatusRequestEntityTooLarge)
	put(h.Alice, "go-basics", `{"capacity":1}`, http.StatusForbidden)

	// Workshops with a schedule: every member, changed by merge patches,
	// deleted.
	put(h.Admin, "go-series", scheduledBody, http.StatusCreated)
	tr.do("GET /api/v1/workshops/{id}", call{via: h.Alice, method: http.MethodGet, path: api.WorkshopPath("go-series")}, http.StatusOK)
	patch := func(via, id, body string, want int, kv ...string) {
		c := call{via: via, method: http.MethodPatch, path: api.WorkshopPath(id), header: http.Header{"Content-Type": {api.MediaMergePatch}}, body: body}
		tr.do("PATCH /api/v1/workshops/{id}", withHeader(c, kv...), want)
	}
	patch(h.Admin, "go-series", `{"title":"Go, the series","location":null,"max_per_person":null}`, http.StatusOK)
	patch(viaSocket, "go-series", `{"capacity":9}`, http.StatusOK, "Content-Type", api.MediaJSON, "If-Match", `"2"`)
	patch(h.Admin, "go-series", `{"capacity":9}`, http.StatusPreconditionFailed, "If-Match", `"2"`)
	patch(h.Admin, "go-series", `{"title":null}`, http.StatusUnprocessableEntity)
	patch(h.Admin, "go-series", `{"max_per_person":10}`, http.StatusUnprocessableEntity) // Above the capacity.
	patch(h.Admin, "go-series", `{"ends_at":"2027-03-06T08:00:00Z"}`, http.StatusUnprocessableEntity)
	patch(h.Admin, "go-series", `{"title":"x"}`, http.StatusUnsupportedMediaType, "Content-Type", "text/plain")
	patch(h.Admin, "no-such", `{"title":"x"}`, http.StatusNotFound)
	patch(h.Alice, "go-series", `{"title":"x"}`, http.StatusForbidden)
	patch(h.Admin, "go-series", `{"description":"`+strings.Repeat("x", api.MaxWorkshopBytes)+`"}`, http.StatusRequestEntityTooLarge)
	del := func(via, id string, want int, kv ...string) {
		tr.do("DELETE /api/v1/workshops/{id}", withHeader(call{via: via, method: http.MethodDelete, path: api.WorkshopPath(id)}, kv...), want)
	}
	del(h.Admin, "go-series", http.StatusPreconditionFailed, "If-Match", `"1"`)
	del(h.Alice, "go-series", http.StatusForbidden)
	del(h.Admin, "go-series", http.StatusNoContent, "If-Match", `"3"`)
	del(viaSocket, "go-series", http.StatusNotFound)

	// The registration window and the limit per person: decided refusals,
	// stored and replayed.
	put(h.Admin, "later", `{"capacity":5,"starts_at":"2027-01-10T09:00:00Z","registration_opens_at":"2027-01-01T09:00:00Z"}`, http.StatusCreated)
	put(h.Admin, "earlier", `{"capacity":5,"starts_at":"2026-01-10T09:00:00Z"}`, http.StatusCreated)
	put(h.Admin, "limited", `{"capacity":5,"max_per_person":1}`, http.StatusCreated)
	for _, id := range []string{"later", "earlier"} {
		k := uuid.NewString()
		body := fmt.Sprintf(`{"workshop":%q,"quantity":1}`, id)
		tr.do(reservePattern, jsonCall(h.Alice, http.MethodPost, api.PathReservations, k, body), http.StatusConflict)
		tr.do(reservePattern, jsonCall(h.Alice, http.MethodPost, api.PathReservations, k, body), http.StatusConflict)
		tr.do(holdPattern, jsonCall(h.Alice, http.MethodPost, api.PathHolds, uuid.NewString(), fmt.Sprintf(`{"workshop":%q,"quantity":1,"ttl_seconds":60}`, id)), http.StatusConflict)
	}
	tr.do(reservePattern, jsonCall(h.Alice, http.MethodPost, api.PathReservations, uuid.NewString(), `{"workshop":"limited","quantity":1}`), http.StatusCreated)
	kLimit := uuid.NewString()
	tr.do(reservePattern, jsonCall(h.Alice, http.MethodPost, api.PathReservations, kLimit, `{"workshop":"limited","quantity":1}`), http.StatusConflict)
	tr.do(reservePattern, jsonCall(h.Alice, http.MethodPost, api.PathReservations, kLimit, `{"workshop":"limited","quantity":1}`), http.StatusConflict)
	tr.do(holdPattern, jsonCall(h.Alice, http.MethodPost, api.PathHolds, uuid.NewString(), `{"workshop":"limited","quantity":1,"ttl_seconds":60}`), http.StatusConflict)

	// Attendee lists: JSON pages, CSV, refusals.
	attendees := func(via, query string, want int, kv ...string) []byte {
		c := call{via: via, method: http.MethodGet, path: api.AttendeesPath("limited") + query}
		return tr.do("GET /api/v1/workshops/{id}/attendees", withHeader(c, kv...), want)
	}
	attendees(h.Admin, "", http.StatusOK)
	attendees(viaSocket, "?status=all&limit=1", http.StatusOK)
	attendees(h.Admin, "", http.StatusOK, "Accept", "text/csv")
	attendees(h.Admin, "?status=cancelled", http.StatusOK, "Accept", "text/csv")
	attendees(h.Admin, "?limit=1", http.StatusUnprocessableEntity, "Accept", "text/csv")
	attendees(h.Admin, "?status=gone", http.StatusUnprocessableEntity)
	attendees(h.Admin, "?cursor=nope", http.StatusUnprocessableEntity)
	attendees(h.Alice, "", http.StatusForbidden)
	tr.do("GET /api/v1/workshops/{id}/attendees", call{via: h.Admin, method: http.MethodGet, path: api.AttendeesPath("no-such")}, http.StatusNotFound)
	tr.do("GET /api/v1/workshops/{id}/attendees", withHeader(call{via: h.Admin, method: http.MethodGet, path: api.AttendeesPath("no-such")}, "Accept", "text/csv"), http.StatusNotFound)

	// Reservations: the checks in their order, the decisions, replays.
	reserve := func(via, key, body string, want int, kv ...string) []byte {
		return tr.do(reservePattern, withHeader(jsonCall(via, http.MethodPost, api.PathReservations, key, body), kv...), want)
	}
	reserve(h.Alice, "", reserveBody(1), http.StatusBadRequest)
	reserve(h.Alice, "nope", reserveBody(1), http.StatusBadRequest)
	k1 := uuid.NewString()
	reserve(h.Alice, k1, reserveBody(1), http.StatusUnsupportedMediaType, "Content-Type", "text/plain")
	reserve(h.Alice, k1, `{"workshop":"`+strings.Repeat("a", api.MaxBodyBytes)+`"}`, http.StatusRequestEntityTooLarge)
	reserve(h.Alice, k1, `{"workshop":"workshop-demo","quantity":1.0}`, http.StatusUnprocessableEntity)
	reserve(h.Alice, k1, reserveBody(servertest.WorkshopMaxQuantity+1), http.StatusUnprocessableEntity)
	reserve(h.Alice, k1, `{"workshop":"no-such","quantity":1}`, http.StatusNotFound)
	var first engine.Answer
	if err := json.Unmarshal(reserve(h.Alice, k1, reserveBody(1), http.StatusCreated), &first); err != nil {
		t.Fatal(err)
	}
	reserve(h.Alice, `"`+k1+`"`, reserveBody(1), http.StatusCreated) // A replay, the key as a structured-field string.
	reserve(h.Alice, k1, reserveBody(2), http.StatusConflict)        // operation_conflict.
	reserve(viaSocket, uuid.NewString(), reserveBody(2), http.StatusCreated)
	kFull := uuid.NewString()
	reserve(h.Bob, kFull, reserveBody(1), http.StatusConflict) // unavailable, stored.
	reserve(h.Bob, kFull, reserveBody(1), http.StatusConflict) // unavailable, replayed.
	reserve(viaNoToken, uuid.NewString(), reserveBody(1), http.StatusUnauthorized)
	put(h.Admin, demo, `{"capacity":1}`, http.StatusConflict) // capacity_below_reserved.
	tr.do("PATCH /api/v1/workshops/{id}", call{via: h.Admin, method: http.MethodPatch, path: api.WorkshopPath(demo), header: http.Header{"Content-Type": {api.MediaMergePatch}}, body: `{"capacity":1}`}, http.StatusConflict)
	tr.do("DELETE /api/v1/workshops/{id}", call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath(demo)}, http.StatusConflict) // workshop_in_use.

	// Batches: decided item by item, atomic refusals, whole-batch problems.
	batch := func(via, body string, want int, kv ...string) []byte {
		return tr.do("POST /api/v1/batches", withHeader(jsonCall(via, http.MethodPost, api.PathBatches, "", body), kv...), want)
	}
	item := func(key, workshop string, q int) string {
		return fmt.Sprintf(`{"key":%q,"workshop":%q,"quantity":%d}`, key, workshop, q)
	}
	kb := uuid.NewString()
	// Items that are no BatchItem are refused one by one in a 200.
	mixed := jsonCall(h.Alice, http.MethodPost, api.PathBatches, "", `{"items":[`+item(kb, "go-basics", 1)+`,`+item(kb, "go-basics", 1)+`,`+item(k1, demo, 2)+`,`+item("nope", demo, 1)+`,{"key":"x"}]}`)
	mixed.partlyRefused = true
	tr.do("POST /api/v1/batches", mixed, http.StatusOK)
	batch(h.Alice, `{"atomic":true,"items":[`+item(uuid.NewString(), "go-basics", 1)+`,`+item(uuid.NewString(), "no-such", 1)+`]}`, http.StatusConflict)
	batch(h.Alice, `{"items":[]}`, http.StatusUnprocessableEntity)
	batch(h.Alice, `{"items":[`+strings.Repeat(item(kb, "go-basics", 1)+",", api.MaxBatchBytes/40)+item(kb, "go-basics", 1)+`]}`, http.StatusRequestEntityTooLarge)
	batch(h.Alice, `{"items":[`+item(kb, "go-basics", 1)+`]}`, http.StatusUnsupportedMediaType, "Content-Type", "text/plain")
	batch(viaNoToken, `{"items":[`+item(kb, "go-basics", 1)+`]}`, http.StatusUnauthorized)

	// Lookups.
	for _, via := range []string{viaSocket, h.Alice} {
		tr.do("GET /api/v1/reservations/{id}", call{via: via, method: http.MethodGet, path: api.ReservationPath(first.ReservationID)}, http.StatusOK)
	}
	tr.do("GET /api/v1/operations/{key}", call{via: h.Alice, method: http.MethodGet, path: api.PathOperations + "/" + k1}, http.StatusOK)
	tr.do("GET /api/v1/operations/{key}", call{via: h.Bob, method: http.MethodGet, path: api.PathOperations + "/" + kFull}, http.StatusOK)
	tr.do("GET /api/v1/reservations/{id}", call{via: h.Bob, method: http.MethodGet, path: api.ReservationPath(first.ReservationID)}, http.StatusNotFound)
	tr.do("GET /api/v1/reservations/{id}", call{via: h.Bob, method: http.MethodGet, path: api.ReservationPath("nope")}, http.StatusNotFound)
	tr.do("GET /api/v1/operations/{key}", call{via: h.Bob, method: http.MethodGet, path: api.PathOperations + "/" + k1}, http.StatusNotFound)
	tr.do("GET /api/v1/operations/{key}", call{via: h.Bob, method: http.MethodGet, path: api.PathOperations + "/nope"}, http.StatusBadRequest)

	// Cancellations.
	cancel := func(via, key, id string, want int) {
		c := call{via: via, method: http.MethodPost, path: api.CancelPath(id)}
		if key != "" {
			c.header = http.Header{api.HeaderIdempotencyKey: {key}}
		}
		tr.do("POST /api/v1/reservations/{id}/cancel", c, want)
	}
	kc := uuid.NewString()
	cancel(h.Alice, "", first.ReservationID, http.StatusBadRequest)
	cancel(h.Alice, kc, "0123456789abcdef0123456789abcdef", http.StatusNotFound)
	cancel(h.Bob, kc, first.ReservationID, http.StatusNotFound)
	cancel(h.Alice, kc, first.ReservationID, http.StatusOK)
	cancel(h.Alice, kc, first.ReservationID, http.StatusOK)                       // Replayed.
	cancel(viaSocket, uuid.NewString(), first.ReservationID, http.StatusConflict) // already_cancelled.
	cancel(h.Alice, k1, first.ReservationID, http.StatusConflict)                 // operation_conflict: k1 reserved.

	// Holds: held, replayed, confirmed, released, expired, unavailable.
	hold := func(via, key, body string, want int, kv ...string) engine.Answer {
		var a engine.Answer
		if b := tr.do(holdPattern, withHeader(jsonCall(via, http.MethodPost, api.PathHolds, key, body), kv...), want); want == http.StatusCreated {
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	settle := func(route, via, key, path string, want int) {
		tr.do(route, jsonCall(via, http.MethodPost, path, key, "{}"), want)
	}
	const confirmPattern, releasePattern = "POST /api/v1/holds/{id}/confirm", "POST /api/v1/holds/{id}/release"
	hold(h.Alice, "", holdBody(1, 60), http.StatusBadRequest)
	hold(h.Alice, uuid.NewString(), holdBody(1, 60), http.StatusUnsupportedMediaType, "Content-Type", "text/plain")
	hold(h.Alice, uuid.NewString(), holdBody(1, 10), http.StatusUnprocessableEntity)
	hold(h.Alice, uuid.NewString(), `{"workshop":"no-such","quantity":1,"ttl_seconds":60}`, http.StatusNotFound)
	kh := uuid.NewString()
	held := hold(h.Alice, kh, holdBody(1, 60), http.StatusCreated)
	hold(h.Alice, kh, holdBody(1, 60), http.StatusCreated)              // Replayed.
	hold(h.Alice, kh, holdBody(1, 61), http.StatusConflict)             // operation_conflict.
	hold(h.Bob, uuid.NewString(), holdBody(1, 60), http.StatusConflict) // unavailable.
	tr.do("GET /api/v1/holds/{id}", call{via: h.Alice, method: http.MethodGet, path: api.HoldPath(held.HoldID)}, http.StatusOK)
	tr.do("GET /api/v1/holds/{id}", call{via: viaSocket, method: http.MethodGet, path: api.HoldPath(held.HoldID)}, http.StatusOK)
	tr.do("GET /api/v1/holds/{id}", call{via: h.Bob, method: http.MethodGet, path: api.HoldPath(held.HoldID)}, http.StatusNotFound)
	settle(confirmPattern, h.Alice, "", api.ConfirmPath(held.HoldID), http.StatusBadRequest)
	tr.do(confirmPattern, jsonCall(h.Alice, http.MethodPost, api.ConfirmPath(held.HoldID), uuid.NewString(), `{"x":1}`), http.StatusUnprocessableEntity)
	settle(confirmPattern, h.Bob, uuid.NewString(), api.ConfirmPath(held.HoldID), http.StatusNotFound)
	kConfirm := uuid.NewString()
	settle(confirmPattern, h.Alice, kConfirm, api.ConfirmPath(held.HoldID), http.StatusCreated)
	settle(confirmPattern, h.Alice, kConfirm, api.ConfirmPath(held.HoldID), http.StatusCreated) // Replayed.
	settle(confirmPattern, h.Alice, uuid.NewString(), api.ConfirmPath(held.HoldID), http.StatusConflict)
	settle(releasePattern, h.Alice, uuid.NewString(), api.ReleasePath(held.HoldID), http.StatusConflict)
	settle(releasePattern, h.Alice, kConfirm, api.ReleasePath(held.HoldID), http.StatusConflict) // operation_conflict.
	tr.do("GET /api/v1/holds/{id}", call{via: h.Alice, method: http.MethodGet, path: api.HoldPath(held.HoldID)}, http.StatusOK)
	// Another place for the holds that follow.
	put(h.Admin, demo, `{"capacity":5,"max_quantity":2,"title":"Demo"}`, http.StatusOK)
	released := hold(h.Alice, uuid.NewString(), holdBody(1, 60), http.StatusCreated)
	kRelease := uuid.NewString()
	settle(releasePattern, h.Alice, kRelease, api.ReleasePath(released.HoldID), http.StatusOK)
	settle(releasePattern, h.Alice, kRelease, api.ReleasePath(released.HoldID), http.StatusOK) // Replayed.
	settle(releasePattern, h.Alice, uuid.NewString(), api.ReleasePath(released.HoldID), http.StatusConflict)
	settle(confirmPattern, h.Alice, uuid.NewString(), api.ConfirmPath(released.HoldID), http.StatusConflict)
	expiring := hold(h.Alice, uuid.NewString(), holdBody(1, engine.MinHoldTTLSeconds), http.StatusCreated)
	clock.Advance(time.Duration(engine.MinHoldTTLSeconds+1) * time.Second)
	tr.do("GET /api/v1/holds/{id}", call{via: h.Alice, method: http.MethodGet, path: api.HoldPath(expiring.HoldID)}, http.StatusOK)
	settle(confirmPattern, h.Alice, uuid.NewString(), api.ConfirmPath(expiring.HoldID), http.StatusConflict)
	settle(releasePattern, h.Alice, uuid.NewString(), api.ReleasePath(expiring.HoldID), http.StatusConflict)

	// Waiting lists: joining (202), the lists, offers confirmed through
	// their hold, leaving in every state, and the organizer's settings.
	trafficWaitlist(tr, clock)

	// Receipts past their retention: 410 operation_expired.
	clock.Advance(48 * time.Hour)
	if _, err := h.Engine.ExpireReceipts(ctx, time.Hour, 1000); err != nil {
		t.Fatal(err)
	}
	tr.do("GET /api/v1/operations/{key}", call{via: h.Alice, method: http.MethodGet, path: api.PathOperations + "/" + k1}, http.StatusGone)
	reserve(h.Alice, k1, reserveBody(1), http.StatusGone)
	cancel(h.Alice, kc, first.ReservationID, http.StatusGone)
	hold(h.Alice, kh, holdBody(1, 60), http.StatusGone)
	settle(confirmPattern, h.Alice, kConfirm, api.ConfirmPath(held.HoldID), http.StatusGone)
	settle(releasePattern, h.Alice, kRelease, api.ReleasePath(released.HoldID), http.StatusGone)

	// Webhook endpoints, the delivery view and its corrections. The
	// dispatcher's steps (routing events to deliveries, attempts) are the
	// engine's, taken here by the test.
	const webhooksPattern, webhookPattern, deliveriesPattern = "POST /api/v1/admin/webhooks", "DELETE /api/v1/admin/webhooks/{id}", "GET /api/v1/admin/deliveries"
	const retryPattern, skipPattern = "POST /api/v1/admin/deliveries/{id}/retry", "POST /api/v1/admin/deliveries/{id}/skip"
	addHook := func(via, body string, want int) engine.WebhookEndpoint {
		var w engine.WebhookEndpoint
		if b := tr.do(webhooksPattern, jsonCall(via, http.MethodPost, api.PathWebhooks, "", body), want); want == http.StatusCreated {
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
		}
		return w
	}
	endpoint := addHook(h.Admin, `{"url":"https://hooks.example/in","event_types":["reservation.created","hold.created"]}`, http.StatusCreated)
	removed := addHook(viaSocket, `{"url":"http://127.0.0.1:9/all"}`, http.StatusCreated)
	addHook(h.Admin, `{"url":"https://hooks.example/in"}`, http.StatusConflict)
	addHook(h.Admin, `{"url":"http://hooks.example/in"}`, http.StatusUnprocessableEntity)
	addHook(h.Admin, `{"url":"https://hooks.example/x","event_types":["nope"]}`, http.StatusUnprocessableEntity)
	addHook(h.Admin, `{"url":"https://hooks.example/x","event_types":"hold.created"}`, http.StatusUnprocessableEntity)
	addHook(h.Alice, `{"url":"https://hooks.example/x"}`, http.StatusForbidden)
	for _, via := range []string{h.Admin, viaSocket} {
		tr.do("GET /api/v1/admin/webhooks", call{via: via, method: http.MethodGet, path: api.PathWebhooks}, http.StatusOK)
	}
	tr.do(webhookPattern, call{via: h.Admin, method: http.MethodDelete, path: api.WebhookPath(removed.ID)}, http.StatusNoContent)
	tr.do(webhookPattern, call{via: viaSocket, method: http.MethodDelete, path: api.WebhookPath(removed.ID)}, http.StatusNotFound)
	put(h.Admin, "hooked", `{"capacity":5}`, http.StatusCreated)
	for range 2 {
		reserve(h.Alice, uuid.NewString(), `{"workshop":"hooked","quantity":1}`, http.StatusCreated)
	}
	if _, _, err := h.Engine.RouteEvents(ctx, 1000, engine.RouteOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := h.Engine.ClaimDueDeliveries(ctx, 2, time.Minute)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim the deliveries = %d, %v", len(jobs), err)
	}
	failedDelivery, deliveredDelivery := jobs[0].Delivery, jobs[1].Delivery
	for d, st := range map[engine.Delivery]engine.DeliveryState{failedDelivery: engine.DeliveryFailed, deliveredDelivery: engine.DeliveryDelivered} {
		if err := h.Engine.FinishDelivery(ctx, d, engine.Attempt{State: st, Status: 410, Error: "410 Gone"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"", "?state=failed", "?state=failed&channel=webhook&endpoint=" + endpoint.ID + "&limit=1", "?state=delivered&limit=1", "?channel=mail&after=" + failedDelivery.ID} {
		tr.do(deliveriesPattern, call{via: h.Admin, method: http.MethodGet, path: api.PathDeliveries + q}, http.StatusOK)
	}
	tr.do(deliveriesPattern, call{via: viaSocket, method: http.MethodGet, path: api.PathDeliveries + "?state=skipped"}, http.StatusOK)
	for _, q := range []string{"?state=gone", "?channel=sms", "?limit=0", "?cursor=x", "?channel=mail&endpoint=" + endpoint.ID} {
		tr.do(deliveriesPattern, call{via: h.Admin, method: http.MethodGet, path: api.PathDeliveries + q}, http.StatusUnprocessableEntity)
	}
	tr.do(deliveriesPattern, call{via: h.Alice, method: http.MethodGet, path: api.PathDeliveries}, http.StatusForbidden)
	kRetry := uuid.NewString()
	settle(retryPattern, h.Admin, "", api.DeliveryRetryPath(failedDelivery.ID), http.StatusBadRequest)
	tr.do(retryPattern, jsonCall(h.Admin, http.MethodPost, api.DeliveryRetryPath(failedDelivery.ID), kRetry, `{"x":1}`), http.StatusUnprocessableEntity)
	settle(retryPattern, h.Admin, kRetry, api.DeliveryRetryPath("no-such"), http.StatusNotFound)
	settle(skipPattern, h.Admin, kRetry, api.DeliverySkipPath("no-such"), http.StatusNotFound)
	settle(retryPattern, h.Alice, kRetry, api.DeliveryRetryPath(failedDelivery.ID), http.StatusForbidden)
	settle(retryPattern, h.Admin, kRetry, api.DeliveryRetryPath(failedDelivery.ID), http.StatusOK)
	settle(retryPattern, h.Admin, kRetry, api.DeliveryRetryPath(failedDelivery.ID), http.StatusOK)     // Replayed.
	settle(skipPattern, h.Admin, kRetry, api.DeliverySkipPath(failedDelivery.ID), http.StatusConflict) // operation_conflict.
	kSkip := uuid.NewString()
	settle(skipPattern, viaSocket, kSkip, api.DeliverySkipPath(failedDelivery.ID), http.StatusOK)
	settle(skipPattern, viaSocket, kSkip, api.DeliverySkipPath(failedDelivery.ID), http.StatusOK)                   // Replayed.
	settle(skipPattern, h.Admin, uuid.NewString(), api.DeliverySkipPath(failedDelivery.ID), http.StatusConflict)    // already_skipped.
	settle(skipPattern, h.Admin, uuid.NewString(), api.DeliverySkipPath(deliveredDelivery.ID), http.StatusConflict) // already_delivered.
	tr.do("GET /api/v1/admin/operations", call{via: h.Admin, method: http.MethodGet, path: api.PathAdminOps + "?outcome=requeued"}, http.StatusOK)
	tr.do("GET /api/v1/operations/{key}", call{via: h.Admin, method: http.MethodGet, path: api.PathOperations + "/" + kRetry}, http.StatusOK)

	// Tokens, admin routes, fault injection.
	tr.do("POST /api/v1/tokens", jsonCall(h.Admin, http.MethodPost, api.PathTokens, "", `{"actor":"carol"}`), http.StatusCreated)
	tr.do("POST /api/v1/tokens", jsonCall(viaSocket, http.MethodPost, api.PathTokens, "", `{"actor":"dave","admin":true}`), http.StatusCreated)
	tr.do("POST /api/v1/tokens", jsonCall(h.Admin, http.MethodPost, api.PathTokens, "", `{"actor":"X"}`), http.StatusUnprocessableEntity)
	tr.do("POST /api/v1/tokens", jsonCall(h.Admin, http.MethodPost, api.PathTokens, "", `{"actor":"carol"}`+strings.Repeat(" ", api.MaxBodyBytes)), http.StatusRequestEntityTooLarge)
	for _, bad := range []string{`0`, `-1`, `1.5`, `"60"`, `315360001`, `null`} {
		tr.do("POST /api/v1/tokens", jsonCall(h.Admin, http.MethodPost, api.PathTokens, "", `{"actor":"carol","expires_in_seconds":`+bad+`}`), http.StatusUnprocessableEntity)
	}
	var brief api.TokenResponse
	if err := json.Unmarshal(tr.do("POST /api/v1/tokens", jsonCall(h.Admin, http.MethodPost, api.PathTokens, "", `{"actor":"erin","expires_in_seconds":3600}`), http.StatusCreated), &brief); err != nil || brief.ExpiresAt.IsZero() {
		t.Fatalf("token with a lifetime: %+v, %v", brief, err)
	}
	tr.do("GET /api/v1/whoami", call{via: brief.Token, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusOK)
	tr.do("GET /api/v1/tokens", call{via: h.Admin, method: http.MethodGet, path: api.PathTokens}, http.StatusOK)
	tr.do("GET /api/v1/tokens", call{via: viaSocket, method: http.MethodGet, path: api.PathTokens}, http.StatusOK)
	tr.do("DELETE /api/v1/tokens/{id}", call{via: h.Admin, method: http.MethodDelete, path: api.TokenPath(brief.ID)}, http.StatusNoContent)
	tr.do("GET /api/v1/whoami", call{via: brief.Token, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusUnauthorized)
	tr.do("DELETE /api/v1/tokens/{id}", call{via: h.Admin, method: http.MethodDelete, path: api.TokenPath(brief.ID)}, http.StatusNotFound)
	tr.do("DELETE /api/v1/tokens/{id}", call{via: viaSocket, method: http.MethodDelete, path: api.TokenPath(strings.Repeat("f", 32))}, http.StatusNotFound)
	tr.do("GET /api/v1/admin/backup", call{via: viaSocket, method: http.MethodGet, path: api.PathBackup}, http.StatusOK)
	tr.do("GET /api/v1/admin/backup", call{via: h.Admin, method: http.MethodGet, path: api.PathBackup}, http.StatusOK)
	for _, q := range []string{"", "?limit=2", "?actor=alice&outcome=reserved&since=2026-01-01T00:00:00Z"} {
		tr.do("GET /api/v1/admin/operations", call{via: h.Admin, method: http.MethodGet, path: api.PathAdminOps + q}, http.StatusOK)
	}
	tr.do("GET /api/v1/admin/operations", call{via: h.Admin, method: http.MethodGet, path: api.PathAdminOps + "?limit=0"}, http.StatusUnprocessableEntity)
	tr.do("GET /api/v1/admin/operations", call{via: h.Admin, method: http.MethodGet, path: api.PathAdminOps + "?nope=1"}, http.StatusUnprocessableEntity)
	tr.do("POST /api/v1/debug/faults", jsonCall(h.Admin, http.MethodPost, api.PathFaults, "", `{"fault":"nope"}`), http.StatusUnprocessableEntity)
	tr.do("POST /api/v1/debug/faults", jsonCall(viaSocket, http.MethodPost, api.PathFaults, "", `{"fault":"fail_receipt_write","count":2}`), http.StatusOK)
	reserve(h.Alice, uuid.NewString(), reserveBody(1), http.StatusInternalServerError)
	hold(h.Alice, uuid.NewString(), holdBody(1, 60), http.StatusInternalServerError)

	// The browser form and its sign-in (TCP only; the socket says 404).
	for _, asset := range []struct{ route, path string }{{"GET /{$}", "/"}, {"GET /app.js", "/app.js"}, {"GET /answers.js", "/answers.js"}, {"GET /common.js", "/common.js"}, {"GET /style.css", "/style.css"}, {"GET /favicon.svg", "/favicon.svg"},
		{"GET /admin", "/admin"}, {"GET /admin.js", "/admin.js"}, {"GET /admin.css", "/admin.css"}} {
		tr.do(asset.route, call{via: viaNoToken, method: http.MethodGet, path: asset.path}, http.StatusOK)
		tr.do(asset.route, call{via: viaNoToken, method: http.MethodGet, path: asset.path, header: http.Header{"If-None-Match": {`"elsewhere"`}}}, http.StatusOK)
		tr.do(asset.route, call{via: viaNoToken, method: http.MethodGet, path: asset.path, header: http.Header{"If-None-Match": {"*"}}}, http.StatusNotModified)
		tr.do(asset.route, call{via: viaSocket, method: http.MethodGet, path: asset.path}, http.StatusNotFound)
	}
	loginRoute, sessionsRoute, endRoute, linksRoute := "GET "+api.PathLogin, "POST "+api.PathSessions, "DELETE "+api.PathCurrentSession, "POST "+api.PathLoginLinks
	var link api.LoginLinkResponse
	if err := json.Unmarshal(tr.do(linksRoute, jsonCall(viaSocket, http.MethodPost, api.PathLoginLinks, "", `{"actor":"alice"}`), http.StatusCreated), &link); err != nil {
		t.Fatal(err)
	}
	tr.do(linksRoute, call{via: viaSocket, method: http.MethodPost, path: api.PathLoginLinks}, http.StatusCreated)
	tr.do(linksRoute, jsonCall(viaSocket, http.MethodPost, api.PathLoginLinks, "", `{"actor":"X"}`), http.StatusUnprocessableEntity)
	tr.do(linksRoute, call{via: h.Alice, method: http.MethodPost, path: api.PathLoginLinks}, http.StatusForbidden)
	tr.do(linksRoute, jsonCall(viaSocket, http.MethodPost, api.PathLoginLinks, "", `{"admin":true}`), http.StatusCreated)
	tr.do(linksRoute, jsonCall(viaSocket, http.MethodPost, api.PathLoginLinks, "", `{"admin":"yes"}`), http.StatusUnprocessableEntity)
	u, err := url.Parse(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	code := u.Query().Get("code")
	loginPath := api.PathLogin + "?" + url.Values{"code": {code}}.Encode()
	tr.do(loginRoute, withHeader(call{via: viaNoToken, method: http.MethodGet, path: loginPath}, "Sec-Fetch-Site", "none"), http.StatusOK)
	tr.do(loginRoute, withHeader(call{via: viaNoToken, method: http.MethodGet, path: loginPath}, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	tr.do(loginRoute, call{via: viaNoToken, method: http.MethodGet, path: loginPath}, http.StatusForbidden)
	tr.do(loginRoute, call{via: viaSocket, method: http.MethodGet, path: loginPath}, http.StatusNotFound)
	sameOrigin := []string{"Sec-Fetch-Site", "same-origin", "Origin", h.URL}
	tr.do(sessionsRoute, withHeader(jsonCall(viaNoToken, http.MethodPost, api.PathSessions, "", `{"code":"rlc_nope"}`), sameOrigin...), http.StatusUnauthorized)
	tr.do(sessionsRoute, withHeader(jsonCall(viaNoToken, http.MethodPost, api.PathSessions, "", `{"code":1}`), sameOrigin...), http.StatusUnprocessableEntity)
	tr.do(sessionsRoute, withHeader(jsonCall(viaNoToken, http.MethodPost, api.PathSessions, "", `{"code":"x"}`), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
	tr.do(sessionsRoute, jsonCall(viaNoToken, http.MethodPost, api.PathSessions, "", `{"code":"`+strings.Repeat("x", api.MaxBodyBytes)+`"}`), http.StatusRequestEntityTooLarge)
	tr.do(sessionsRoute, jsonCall(viaSocket, http.MethodPost, api.PathSessions, "", `{"code":"x"}`), http.StatusNotFound)
	var session api.SessionResponse
	if err := json.Unmarshal(tr.do(sessionsRoute, withHeader(jsonCall(viaNoToken, http.MethodPost, api.PathSessions, "", `{"code":"`+code+`"}`), sameOrigin...), http.StatusCreated), &session); err != nil {
		t.Fatal(err)
	}
	tr.do("GET /api/v1/whoami", call{via: session.Session, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusOK)
	tr.do(endRoute, withHeader(call{via: session.Session, method: http.MethodDelete, path: api.PathCurrentSession}, sameOrigin...), http.StatusNoContent)
	tr.do(endRoute, call{via: session.Session, method: http.MethodDelete, path: api.PathCurrentSession}, http.StatusNoContent)
	tr.do("GET /api/v1/whoami", call{via: session.Session, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusUnauthorized)
	tr.do(endRoute, call{via: h.Alice, method: http.MethodDelete, path: api.PathCurrentSession}, http.StatusUnauthorized)
	tr.do(endRoute, call{via: viaSocket, method: http.MethodDelete, path: api.PathCurrentSession}, http.StatusNotFound)

	// Sign-in by email: the same 202 for every address, refusals.
	signInRoute, emailRoute := "GET "+api.PathSignIn, "POST "+api.PathSignInEmail
	tr.do(signInRoute, call{via: viaNoToken, method: http.MethodGet, path: api.PathSignIn}, http.StatusOK)
	tr.do(signInRoute, call{via: viaSocket, method: http.MethodGet, path: api.PathSignIn}, http.StatusOK)
	emailCall := func(body string) call {
		return withHeader(jsonCall(viaNoToken, http.MethodPost, api.PathSignInEmail, "", body), sameOrigin...)
	}
	for _, body := range []string{`{"email":"ada@example.org","language":"de"}`, `{"email":"nobody@elsewhere.org"}`} {
		tr.do(emailRoute, emailCall(body), http.StatusAccepted)
	}
	tr.do(emailRoute, emailCall(`{"email":"Ada <ada@example.org>"}`), http.StatusUnprocessableEntity)
	tr.do(emailRoute, emailCall(`{"email":"ada@example.org","language":"fr"}`), http.StatusUnprocessableEntity)
	tr.do(emailRoute, emailCall(`{"email":"ada@example.org","admin":true}`), http.StatusUnprocessableEntity)
	tr.do(emailRoute, jsonCall(viaSocket, http.MethodPost, api.PathSignInEmail, "", `{"email":"ada@example.org"}`), http.StatusNotFound)
	for range server.DefaultSignInPerAddress - 1 {
		tr.do(emailRoute, emailCall(`{"email":"ada@example.org"}`), http.StatusAccepted)
	}
	tr.do(emailRoute, emailCall(`{"email":"ada@example.org"}`), http.StatusTooManyRequests)
	if n := mailer.count(); n != server.DefaultSignInPerAddress {
		t.Errorf("%d sign-in mails queued, want %d (none for a domain not allowed, none over the limit)", n, server.DefaultSignInPerAddress)
	}

	// Requests outside every route: the API's problems, net/http's answers
	// elsewhere.
	tr.do("unmatched", call{via: h.Alice, method: http.MethodGet, path: "/api/v1/nope"}, http.StatusNotFound)
	tr.do("unmatched", call{via: viaSocket, method: http.MethodDelete, path: api.PathWhoAmI}, http.StatusMethodNotAllowed)
	tr.do("unmatched", call{via: viaNoToken, method: http.MethodGet, path: "/nope"}, http.StatusNotFound)

	// Every route: the refusals of the middleware, of authentication and
	// of the framing, on the listeners that give them.
	forEachRoute(t, first.ReservationID, held.HoldID, func(route string, s struct{ path, body string }) {
		method, _, _ := strings.Cut(route, " ")
		tr.do(route, withHeader(sampleCall(viaSocket, route, s.path, s.body), "Origin", "http://localhost"), http.StatusForbidden)
		tr.do(route, withHeader(sampleCall(h.Admin, route, s.path, s.body), "Host", "evil.example"), http.StatusForbidden)
		if method != http.MethodGet {
			tr.do(route, withHeader(sampleCall(h.Admin, route, s.path, s.body), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"), http.StatusForbidden)
		}
		if !anyoneRoutes[route] {
			tr.do(route, sampleCall(viaNoToken, route, s.path, s.body), http.StatusUnauthorized)
		}
		if adminRoutes[route] {
			tr.do(route, sampleCall(h.Alice, route, s.path, s.body), http.StatusForbidden)
		}
		if bodyRoutes[route] {
			tr.do(route, withHeader(sampleCall(h.Admin, route, s.path, s.body), "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
			tr.do(route, sampleCall(h.Admin, route, s.path, `{"x":"`+strings.Repeat("x", bodyLimit(route))+`"}`), http.StatusRequestEntityTooLarge)
			for _, tcp := range []bool{false, true} {
				if !tcp && (route == "POST "+api.PathSessions || route == "POST "+api.PathSignInEmail) {
					continue // Refused on the socket before its body is read.
				}
				tr.raw(route, tcp, fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
					method, s.path, h.Admin, uuid.NewString(), len(s.body)+10, s.body), true, http.StatusRequestTimeout)
			}
		}
		for _, tcp := range []bool{false, true} {
			tr.raw(route, tcp, fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", method, s.path), false, http.StatusBadRequest)
			tr.raw(route, tcp, fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\nX-Padding: %s\r\n\r\n", method, s.path, strings.Repeat("p", server.MaxHeaderBytes)), false, http.StatusRequestHeaderFieldsTooLarge)
		}
	})

	// Every route answers a success somewhere.
	for _, route := range server.RoutePatterns() {
		ok := false
		for status := range tr.seen[route] {
			ok = ok || status/100 == 2
		}
		if !ok {
			t.Errorf("route %s got no success in the suite (statuses %v)", route, slices.Sorted(maps.Keys(tr.seen[route])))
		}
	}
}

// TestOpenAPIMatchesStoreUnavailable checks every route's answer when the
// store cannot serve: on TCP authentication needs the store, so every
// route with credentials answers 503 store_unavailable with Retry-After;
// on the socket every route that reaches the store does.
func TestOpenAPIMatchesStoreUnavailable(t *testing.T) {
	t.Parallel()
	tr := newTraffic(t, servertest.Options{FaultInjection: true})
	if err := tr.h.Store.Close(); err != nil {
		t.Fatal(err)
	}
	id := "0123456789abcdef0123456789abcdef"
	forEachRoute(t, id, id, func(route string, s struct{ path, body string }) {
		if !anyoneRoutes[route] {
			tr.do(route, sampleCall(tr.h.Admin, route, s.path, s.body), http.StatusServiceUnavailable)
		}
		if want, ok := socketUnavailable[route]; ok {
			tr.do(route, sampleCall(viaSocket, route, s.path, s.body), want)
		}
	})
	tr.do("GET /livez", call{via: viaNoToken, method: http.MethodGet, path: api.PathLive}, http.StatusOK)
	tr.do("GET /readyz", call{via: viaNoToken, method: http.MethodGet, path: api.PathReady}, http.StatusServiceUnavailable)
	sameOrigin := []string{"Sec-Fetch-Site", "same-origin", "Origin", tr.h.URL}
	tr.do("POST "+api.PathSessions, withHeader(sampleCall(viaNoToken, "POST "+api.PathSessions, api.PathSessions, `{"code":"rlc_x"}`), sameOrigin...), http.StatusServiceUnavailable)
	tr.do("DELETE "+api.PathCurrentSession, call{via: "rss_x", method: http.MethodDelete, path: api.PathCurrentSession}, http.StatusServiceUnavailable)
}

// TestOpenAPIMatchesRateLimited checks every API route's answer to a
// caller over the rate limit: 429 rate_limited with Retry-After, for an
// actor (alice) on the routes that need credentials and for an address on
// those that need none; routes outside /api/ are not limited.
func TestOpenAPIMatchesRateLimited(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	tr := newTraffic(t, servertest.Options{FaultInjection: true, RateLimit: server.RateLimit{Rate: 0.5, Burst: 1, Now: clock.Now}})
	tr.do("GET /api/v1/whoami", call{via: tr.h.Alice, method: http.MethodGet, path: api.PathWhoAmI}, http.StatusOK)
	for range server.AddressShare {
		tr.do("GET "+api.PathSignIn, call{via: viaNoToken, method: http.MethodGet, path: api.PathSignIn}, http.StatusOK)
	}
	id := "0123456789abcdef0123456789abcdef"
	forEachRoute(t, id, id, func(route string, s struct{ path, body string }) {
		via := tr.h.Alice
		if anyoneRoutes[route] {
			via = viaNoToken
		}
		method, path, _ := strings.Cut(route, " ")
		switch {
		case !strings.HasPrefix(path, "/api/") && anyoneRoutes[route]:
			tr.do(route, withHeader(sampleCall(via, route, s.path, s.body), "Sec-Fetch-Site", "none"), http.StatusOK)
		case !strings.HasPrefix(path, "/api/"):
		case method != http.MethodGet:
			tr.do(route, withHeader(sampleCall(via, route, s.path, s.body), "Sec-Fetch-Site", "same-origin", "Origin", tr.h.URL), http.StatusTooManyRequests)
		default:
			tr.do(route, sampleCall(via, route, s.path, s.body), http.StatusTooManyRequests)
		}
	})
}

// socketUnavailable is what each route answers on the socket when the
// store cannot serve: the peer's uid is known without the store, but its
// actor is not (it is bound in the store), so every route that needs the
// actor answers 503 too.
var socketUnavailable = map[string]int{
	"GET /healthz":                             http.StatusOK,
	"GET /livez":                               http.StatusOK,
	"GET /readyz":                              http.StatusServiceUnavailable,
	"GET /metrics":                             http.StatusOK,
	"GET /api/v1/whoami":                       http.StatusServiceUnavailable,
	"PUT /api/v1/me":                           http.StatusServiceUnavailable,
	"GET /api/v1/workshops":                    http.StatusServiceUnavailable,
	"GET /api/v1/workshops/{id}":               http.StatusServiceUnavailable,
	"PUT /api/v1/workshops/{id}":               http.StatusServiceUnavailable,
	"PATCH /api/v1/workshops/{id}":             http.StatusServiceUnavailable,
	"DELETE /api/v1/workshops/{id}":            http.StatusServiceUnavailable,
	"GET /api/v1/workshops/{id}/attendees":     http.StatusServiceUnavailable,
	"POST /api/v1/reservations":                http.StatusServiceUnavailable,
	"GET /api/v1/operations/{key}":             http.StatusServiceUnavailable,
	"GET /api/v1/reservations/{id}":            http.StatusServiceUnavailable,
	"POST /api/v1/reservations/{id}/cancel":    http.StatusServiceUnavailable,
	"POST /api/v1/holds":                       http.StatusServiceUnavailable,
	"GET /api/v1/holds/{id}":                   http.StatusServiceUnavailable,
	"POST /api/v1/holds/{id}/confirm":          http.StatusServiceUnavailable,
	"POST /api/v1/holds/{id}/release":          http.StatusServiceUnavailable,
	"GET /api/v1/waitlist":                     http.StatusServiceUnavailable,
	"POST /api/v1/waitlist/{id}/leave":         http.StatusServiceUnavailable,
	"GET /api/v1/workshops/{id}/waitlist":      http.StatusServiceUnavailable,
	"POST /api/v1/tokens":                      http.StatusServiceUnavailable,
	"GET /api/v1/tokens":                       http.StatusServiceUnavailable,
	"DELETE /api/v1/tokens/{id}":               http.StatusServiceUnavailable,
	"GET /api/v1/admin/backup":                 http.StatusServiceUnavailable,
	"GET /api/v1/admin/operations":             http.StatusServiceUnavailable,
	"POST /api/v1/admin/webhooks":              http.StatusServiceUnavailable,
	"GET /api/v1/admin/webhooks":               http.StatusServiceUnavailable,
	"DELETE /api/v1/admin/webhooks/{id}":       http.StatusServiceUnavailable,
	"GET /api/v1/admin/deliveries":             http.StatusServiceUnavailable,
	"POST /api/v1/admin/deliveries/{id}/retry": http.StatusServiceUnavailable,
	"POST /api/v1/admin/deliveries/{id}/skip":  http.StatusServiceUnavailable,
	"GET /api/v1/openapi.yaml":                 http.StatusOK,
	"GET /api/v1/sign-in":                      http.StatusOK,
	"POST " + api.PathLoginLinks:               http.StatusServiceUnavailable,
}

// scheduledBody is the body of a PUT with every member of a workshop.
const scheduledBody = `{"capacity":8,"max_quantity":2,"title":"Go, session 1","hidden":false,` +
	`"description":"Bring a laptop.\nGo 1.26 installed.","location":"Room 3.14, Hauptstraße 5",` +
	`"starts_at":"2027-03-06T10:00:00+01:00","ends_at":"2027-03-06T16:00:00+01:00","time_zone":"Europe/Berlin",` +
	`"registration_opens_at":"2026-11-01T09:00:00Z","registration_closes_at":"2027-03-05T18:00:00Z","max_per_person":2}`

// mailRecorder is a server.Mailer that keeps what it is given.
type mailRecorder struct {
	mu   sync.Mutex
	msgs []rmail.Message
}

func (m *mailRecorder) Enqueue(msg rmail.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, msg)
	return nil
}

func (m *mailRecorder) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.msgs)
}

func mustEmailPolicy(t *testing.T, s string) server.EmailPolicy {
	t.Helper()
	p, err := server.ParseEmailPolicy(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// trafficWaitlist sends the waiting list's exchanges of
// TestOpenAPIMatchesTraffic: a workshop of one place that alice takes,
// bob, the socket's actor and alice again join its list, alice's
// cancellation offers the place to bob, who confirms the offer's hold;
// the socket's actor leaves, and alice's offer expires.
func trafficWaitlist(tr *traffic, clock *testClock) {
	t, h := tr.t, tr.h
	const wl = "wl"
	put := func(body string, want int) {
		tr.do("PUT /api/v1/workshops/{id}", jsonCall(h.Admin, http.MethodPut, api.WorkshopPath(wl), "", body), want)
	}
	patch := func(body string, want int) {
		c := call{via: h.Admin, method: http.MethodPatch, path: api.WorkshopPath(wl), header: http.Header{"Content-Type": {api.MediaMergePatch}}, body: body}
		tr.do("PATCH /api/v1/workshops/{id}", c, want)
	}
	put(`{"capacity":1,"offer_ttl_seconds":60}`, http.StatusCreated)
	put(`{"capacity":1,"offer_ttl_seconds":30}`, http.StatusUnprocessableEntity)
	patch(`{"offer_ttl_seconds":null}`, http.StatusOK)
	patch(`{"offer_ttl_seconds":2592001}`, http.StatusUnprocessableEntity)
	patch(`{"offer_ttl_seconds":120}`, http.StatusOK)
	reserve := func(via, key, body string, want int) engine.Answer {
		var a engine.Answer
		b := tr.do("POST /api/v1/reservations", jsonCall(via, http.MethodPost, api.PathReservations, key, body), want)
		if want < 300 {
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	const join = `{"workshop":"wl","quantity":1,"waitlist":true}`
	alices := reserve(h.Alice, uuid.NewString(), join, http.StatusCreated) // A free place: reserved, waitlist or not.
	kBob := uuid.NewString()
	bobs := reserve(h.Bob, kBob, join, http.StatusAccepted)
	if bobs.Status != engine.StatusWaiting || bobs.Position != 1 {
		t.Fatalf("bob's answer %+v, want waiting at position 1", bobs)
	}
	reserve(h.Bob, kBob, join, http.StatusAccepted)                                         // Replayed.
	reserve(h.Bob, kBob, `{"workshop":"wl","quantity":1}`, http.StatusConflict)             // operation_conflict.
	reserve(h.Bob, uuid.NewString(), `{"workshop":"wl","quantity":1}`, http.StatusConflict) // unavailable: people wait.
	reserve(h.Bob, uuid.NewString(), `{"workshop":"wl","quantity":1,"waitlist":1}`, http.StatusUnprocessableEntity)
	roots := reserve(viaSocket, uuid.NewString(), join, http.StatusAccepted)
	batch := func(body string, want int) {
		tr.do("POST /api/v1/batches", jsonCall(h.Alice, http.MethodPost, api.PathBatches, "", body), want)
	}
	batch(`{"items":[{"key":"`+uuid.NewString()+`","workshop":"wl","quantity":1,"waitlist":true}]}`, http.StatusOK)
	batch(`{"atomic":true,"items":[{"key":"`+uuid.NewString()+`","workshop":"wl","quantity":1,"waitlist":true}]}`, http.StatusConflict)

	// The lists: one's own, an admin's view of another's, the organizer's.
	own := func(via, query string, want int) api.WaitlistPage {
		var page api.WaitlistPage
		if b := tr.do("GET /api/v1/waitlist", call{via: via, method: http.MethodGet, path: api.PathWaitlist + query}, want); want == http.StatusOK {
			if err := json.Unmarshal(b, &page); err != nil {
				t.Fatal(err)
			}
		}
		return page
	}
	own(h.Bob, "", http.StatusOK)
	own(viaSocket, "?status=waiting&workshop=wl&limit=1", http.StatusOK)
	own(h.Admin, "?actor=bob&status=all", http.StatusOK)
	own(h.Alice, "?actor=bob", http.StatusForbidden)
	own(h.Bob, "?status=gone", http.StatusUnprocessableEntity)
	own(h.Bob, "?cursor=nope", http.StatusUnprocessableEntity)
	organizer := func(via, id, query string, want int) {
		tr.do("GET /api/v1/workshops/{id}/waitlist", call{via: via, method: http.MethodGet, path: api.WorkshopWaitlistPath(id) + query}, want)
	}
	organizer(h.Admin, wl, "", http.StatusOK)
	organizer(viaSocket, wl, "?status=waiting&limit=1", http.StatusOK)
	organizer(h.Alice, wl, "", http.StatusForbidden)
	organizer(h.Admin, "no-such", "", http.StatusNotFound)
	organizer(h.Admin, wl, "?status=gone", http.StatusUnprocessableEntity)
	organizer(h.Admin, wl, "?actor=bob", http.StatusUnprocessableEntity)
	tr.do("GET /api/v1/workshops/{id}", call{via: h.Alice, method: http.MethodGet, path: api.WorkshopPath(wl)}, http.StatusOK)
	tr.do("DELETE /api/v1/workshops/{id}", call{via: h.Admin, method: http.MethodDelete, path: api.WorkshopPath(wl)}, http.StatusConflict)

	// alice's cancellation offers her place to bob; he confirms the offer.
	tr.do("POST /api/v1/reservations/{id}/cancel", call{via: h.Alice, method: http.MethodPost, path: api.CancelPath(alices.ReservationID),
		header: http.Header{api.HeaderIdempotencyKey: {uuid.NewString()}}}, http.StatusOK)
	page := own(h.Bob, "?status=offered", http.StatusOK)
	if len(page.Entries) != 1 || page.Entries[0].HoldID == "" {
		t.Fatalf("bob's offered entries: %+v, want his one, with its hold", page.Entries)
	}
	offer := page.Entries[0].HoldID
	tr.do("GET /api/v1/holds/{id}", call{via: h.Bob, method: http.MethodGet, path: api.HoldPath(offer)}, http.StatusOK)
	tr.do("POST /api/v1/holds/{id}/confirm", jsonCall(h.Bob, http.MethodPost, api.ConfirmPath(offer), uuid.NewString(), "{}"), http.StatusCreated)

	// Leaving: left, replayed, already_left, already_reserved, refusals.
	leave := func(via, key, id, body string, want int) {
		tr.do("POST /api/v1/waitlist/{id}/leave", jsonCall(via, http.MethodPost, api.WaitlistLeavePath(id), key, body), want)
	}
	kLeave := uuid.NewString()
	leave(viaSocket, "", roots.EntryID, "{}", http.StatusBadRequest)
	leave(viaSocket, kLeave, roots.EntryID, `{"x":1}`, http.StatusUnprocessableEntity)
	leave(h.Alice, kLeave, roots.EntryID, "{}", http.StatusNotFound) // Another's entry.
	leave(viaSocket, kLeave, strings.Repeat("0", 32), "{}", http.StatusNotFound)
	leave(viaSocket, kLeave, "nope", "{}", http.StatusNotFound)
	leave(viaSocket, kLeave, roots.EntryID, "{}", http.StatusOK)
	leave(viaSocket, kLeave, roots.EntryID, "{}", http.StatusOK) // Replayed.
	leave(viaSocket, uuid.NewString(), roots.EntryID, "{}", http.StatusConflict)
	leave(viaSocket, kBob, roots.EntryID, "{}", http.StatusConflict) // operation_conflict: another actor's key is another key.
	leave(h.Bob, kBob, bobs.EntryID, "{}", http.StatusConflict)      // operation_conflict: the key joined.
	leave(h.Bob, uuid.NewString(), bobs.EntryID, "{}", http.StatusConflict)

	// bob's cancellation offers the place to alice's entry, whose offer
	// expires before she leaves.
	var bobsNow api.ReservationPage
	if err := json.Unmarshal(tr.do("GET /api/v1/reservations", call{via: h.Bob, method: http.MethodGet, path: api.PathReservations + "?workshop=wl"}, http.StatusOK), &bobsNow); err != nil || len(bobsNow.Reservations) != 1 {
		t.Fatalf("bob's reservations in wl: %+v, %v", bobsNow, err)
	}
	tr.do("POST /api/v1/reservations/{id}/cancel", call{via: h.Bob, method: http.MethodPost, path: api.CancelPath(bobsNow.Reservations[0].ID),
		header: http.Header{api.HeaderIdempotencyKey: {uuid.NewString()}}}, http.StatusOK)
	page = own(h.Alice, "?status=offered", http.StatusOK)
	if len(page.Entries) != 1 {
		t.Fatalf("alice's offered entries: %+v, want one", page.Entries)
	}
	clock.Advance(121 * time.Second)
	own(h.Alice, "?status=expired", http.StatusOK)
	leave(h.Alice, uuid.NewString(), page.Entries[0].ID, "{}", http.StatusConflict)
	organizer(h.Admin, wl, "?status=all", http.StatusOK)
}
