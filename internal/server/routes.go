package server

import (
	"net/http"
	"strings"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/engine"
)

// access says who may use a route.
type access int

const (
	anyone        access = iota // No credentials needed.
	actor                       // Any authenticated caller.
	admin                       // An authenticated admin.
	socketOrAdmin               // Anyone on the Unix socket, admins on TCP.
)

// handlerFunc is an API handler: it gets the authenticated caller (the zero
// Principal on routes open to anyone) and returns an error to be answered as
// a problem detail, or nil once it has written its answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request, who engine.Principal) error

// route is one row of the route table.
type route struct {
	pattern string
	access  access
	handle  handlerFunc
}

// routes is the route table of API v1.
func (s *Server) routes() []route {
	rs := []route{
		{"GET /healthz", anyone, s.health},
		{"GET /livez", anyone, s.health},
		{"GET /readyz", anyone, s.ready},
		{"GET /metrics", socketOrAdmin, s.serveMetrics},
		{"GET /api/v1/whoami", actor, s.whoami},
		{"PUT /api/v1/me", actor, s.putMe},
		{"GET /api/v1/workshops", actor, s.listWorkshops},
		{"GET /api/v1/workshops/{id}", actor, s.getWorkshop},
		{"PUT /api/v1/workshops/{id}", admin, s.putWorkshop},
		{"PATCH /api/v1/workshops/{id}", admin, s.patchWorkshop},
		{"DELETE /api/v1/workshops/{id}", admin, s.deleteWorkshop},
		{"GET /api/v1/workshops/{id}/attendees", admin, s.listAttendees},
		{"GET /api/v1/workshops/{id}/waitlist", admin, s.workshopWaitlist},
		{"POST /api/v1/reservations", actor, s.reserve},
		{"POST /api/v1/batches", actor, s.batch},
		{"GET /api/v1/reservations", actor, s.listReservations},
		{"GET /api/v1/operations/{key}", actor, s.getOperation},
		{"GET /api/v1/reservations/{id}", actor, s.getReservation},
		{"POST /api/v1/reservations/{id}/cancel", actor, s.cancel},
		{"POST /api/v1/holds", actor, s.hold},
		{"GET /api/v1/holds", actor, s.listHolds},
		{"GET /api/v1/holds/{id}", actor, s.getHold},
		{"POST /api/v1/holds/{id}/confirm", actor, s.confirmHold},
		{"POST /api/v1/holds/{id}/release", actor, s.releaseHold},
		{"GET /api/v1/waitlist", actor, s.listWaitlist},
		{"POST /api/v1/waitlist/{id}/leave", actor, s.leaveWaitlist},
		{"POST /api/v1/tokens", admin, s.createToken},
		{"GET /api/v1/tokens", admin, s.listTokens},
		{"DELETE /api/v1/tokens/{id}", admin, s.revokeToken},
		{"GET /api/v1/admin/backup", admin, s.backup},
		{"GET /api/v1/admin/operations", admin, s.listOperations},
		{"POST /api/v1/admin/webhooks", admin, s.addWebhook},
		{"GET /api/v1/admin/webhooks", admin, s.listWebhooks},
		{"DELETE /api/v1/admin/webhooks/{id}", admin, s.removeWebhook},
		{"GET /api/v1/admin/deliveries", admin, s.listDeliveries},
		{"POST /api/v1/admin/deliveries/{id}/retry", admin, s.retryDelivery},
		{"POST /api/v1/admin/deliveries/{id}/skip", admin, s.skipDelivery},
		{"GET /api/v1/openapi.yaml", anyone, s.openAPI},
	}
	if s.faultInjection != nil {
		rs = append(rs, route{"POST /api/v1/debug/faults", admin, s.armFault})
	}
	rs = append(rs, s.webRoutes()...)
	rs = append(rs, s.signInRoutes()...)
	rs = append(rs, s.oidcRoutes()...)
	return rs
}

// newMux registers the route table. Requests that match no route get the
// mux's own answer, except under /api/, where 404 and 405 are problem
// details like every other API error.
func (s *Server) newMux() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.pattern, s.guard(rt))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" || !strings.HasPrefix(r.URL.Path, "/api/") {
			mux.ServeHTTP(w, r)
			return
		}
		// Learn from the mux whether this is a 404 or a 405 (and which
		// methods are allowed), then answer it as a problem.
		probe := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			fail(w, r, engine.Errorf(api.CodeMethodNotAllowed, "%s is not allowed on %s (allowed: %s)", r.Method, engine.Truncate(r.URL.Path, 80), probe.header.Get("Allow")))
			return
		}
		fail(w, r, engine.Errorf(api.CodeNotFound, "no API route %s", engine.Truncate(r.URL.Path, 80)))
	})
}

// guard checks a route's access before its handler runs, records the route
// and the actor for the request log, and answers the handler's error. An
// API route (under /api/) takes the request from the caller's bucket of
// the rate limit first, once the caller is known: a request whose
// credentials fail counts as one without credentials.
func (s *Server) guard(rt route) http.Handler {
	_, path, _ := strings.Cut(rt.pattern, " ")
	limits := s.limits
	if !strings.HasPrefix(path, "/api/") {
		limits = nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(r)
		info.route = rt.pattern
		var who engine.Principal
		if need := rt.access; need != anyone && !(need == socketOrAdmin && connOf(r.Context()).socket) {
			var err error
			who, err = s.principal(r)
			if err != nil {
				if engine.ErrorCode(err) == engine.CodeUnauthenticated {
					if limited := s.rateLimit(r, limits, who); limited != nil {
						err = limited
					}
				}
				fail(w, r, err)
				return
			}
			info.actor = who.Actor
			if err := s.rateLimit(r, limits, who); err != nil {
				fail(w, r, err)
				return
			}
			if need != actor && !who.Admin {
				fail(w, r, engine.Errorf(engine.CodeForbidden, "%s is not an admin", who.Actor))
				return
			}
		} else if err := s.rateLimit(r, limits, who); err != nil {
			fail(w, r, err)
			return
		}
		if err := rt.handle(w, r, who); err != nil {
			fail(w, r, err)
		}
	})
}

// rateLimit applies limits (nil: none) to request r of who, and records
// a refusal for the request log (with the operation key the request
// carries, so that its later send can be followed), the metrics and the
// daemon's warning.
func (s *Server) rateLimit(r *http.Request, limits *rateLimits, who engine.Principal) error {
	err := limits.limit(r, who)
	if err != nil {
		info := infoOf(r)
		info.outcome = engine.OutcomeRateLimited
		if key, kerr := api.ParseOperationKey(r.Header.Get(api.HeaderIdempotencyKey)); kerr == nil {
			info.opKey = string(key)
		}
		s.atRateLimit(err)
	}
	return err
}

// headerRecorder captures the status and header of the mux's own 404 and
// 405 handlers and discards their plain-text body.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(status int)      { h.status = status }
