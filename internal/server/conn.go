package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/framing"
	"github.com/reserve/reserve/internal/peercred"
)

// connInfo is what the server knows about a connection before it reads a
// request: which listener accepted it and, on the Unix socket, who is on the
// other end according to the kernel.
type connInfo struct {
	socket   bool   // Accepted by the Unix socket listener.
	loopback bool   // Accepted by a TCP listener bound to a loopback address.
	uid      uint32 // The socket peer's uid, valid when peerErr is nil.
	admin    bool   // Whether the socket peer is an admin.
	peerErr  error
	framing  *framing.Conn // Follows the framing of the requests read; nil outside serve.

	// actor is the socket peer's actor once its first request that needs
	// one has read it (socketPrincipal); mu guards it.
	mu    sync.Mutex
	actor string
}

type connKey struct{}

func connOf(ctx context.Context) *connInfo {
	c, _ := ctx.Value(connKey{}).(*connInfo)
	if c == nil {
		return &connInfo{}
	}
	return c
}

// socketConnContext reads who is on the other end of a Unix socket
// connection, from SO_PEERCRED, when the connection is accepted: its uid
// and whether it is an admin. Its actor, which may need the store and the
// user database, is worked out on its first request that needs one.
func (s *Server) socketConnContext(ctx context.Context, c net.Conn) context.Context {
	info := &connInfo{socket: true}
	info.framing, _ = c.(*framing.Conn)
	if info.framing != nil {
		c = info.framing.NetConn()
	}
	// The supplementary groups (SO_PEERGROUPS, Linux 4.13 and later) are
	// read only when they decide something.
	var cred peercred.Cred
	var err error
	if len(s.adminGIDs) > 0 {
		cred, err = peercred.Get(c)
	} else {
		cred.UID, err = peercred.UID(c)
	}
	if err != nil {
		info.peerErr = fmt.Errorf("read peer credentials: %w", err)
	} else {
		info.uid = cred.UID
		info.admin = cred.UID == 0 || int64(cred.UID) == int64(s.daemonUID) || InAdminGroup(cred, s.adminGIDs)
	}
	return context.WithValue(ctx, connKey{}, info)
}

// tcpConnContext marks a TCP connection, and whether its listener is on a
// loopback address (then only loopback Host headers are accepted).
func tcpConnContext(loopback bool) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		fc, _ := c.(*framing.Conn)
		return context.WithValue(ctx, connKey{}, &connInfo{loopback: loopback, framing: fc})
	}
}

// SocketActor returns the actor of the Unix socket peer uid: the actor its
// uid is bound to in the store (engine.Engine.ActorOf). A uid seen for the
// first time is bound to SocketActorName, asked of lookup then; from then
// on the uid is that actor whatever the user database says of it later, or
// whether it answers at all, so a retry with the same operation key is
// always the same actor's. A uid without an actor whose lookup fails gets
// CodeIdentityUnavailable, and nothing is bound.
func SocketActor(ctx context.Context, eng *engine.Engine, uid uint32, lookup func(uid uint32) (string, error)) (string, error) {
	return eng.ActorOf(ctx, engine.UIDSubject(uid), func() (string, error) { return SocketActorName(uid, lookup) })
}

// SocketActorName is the actor name the user database gives uid now:
// "unix-<username>" when lookup names it and the name makes a valid actor,
// "uid-<n>" when lookup answers that there is no such user
// (user.UnknownUserIdError) or names it with a name that makes no valid
// actor. Any other failure of lookup (a name service that is down or
// slow) is CodeIdentityUnavailable, with the failure in the chain for the
// log: calling the uid "uid-<n>" then would bind it to another actor than
// the name it has.
func SocketActorName(uid uint32, lookup func(uid uint32) (string, error)) (string, error) {
	n := strconv.FormatUint(uint64(uid), 10)
	name, err := lookup(uid)
	var unknown user.UnknownUserIdError
	switch {
	case errors.As(err, &unknown):
	case err != nil:
		return "", fmt.Errorf("%w: %w", engine.Errorf(engine.CodeIdentityUnavailable,
			"the user database could not say who uid %s is, and uid %s has no actor yet, so this request got no decision; send it again with the same Idempotency-Key", n, n), err)
	case engine.ValidateActor("unix-"+name) == nil:
		return "unix-" + name, nil
	}
	return "uid-" + n, nil
}

// InAdminGroup reports whether a socket peer is a member of one of the
// admin groups (--admin-group): its primary gid or one of its
// supplementary groups, both as the kernel recorded them when it
// connected. The kernel's record is the peer's real membership at that
// moment; the group database could list members the process never had,
// or miss a group the process was given.
func InAdminGroup(cred peercred.Cred, adminGIDs []uint32) bool {
	for _, g := range adminGIDs {
		if cred.GID == g || slices.Contains(cred.Groups, g) {
			return true
		}
	}
	return false
}

// lookupUsername asks the system's user database (os/user) for the name
// of uid.
func lookupUsername(uid uint32) (string, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// principal authenticates the caller of r: the socket peer on the Unix
// socket, on TCP the bearer credential of the Authorization header, an API
// token or a browser session (told apart by their prefixes). Cookies are
// never read.
func (s *Server) principal(r *http.Request) (engine.Principal, error) {
	c := connOf(r.Context())
	if c.socket {
		if c.peerErr != nil {
			infoOf(r).err = c.peerErr
			return engine.Principal{}, engine.Errorf(engine.CodeUnauthenticated, "the peer credentials of this socket connection could not be read")
		}
		return s.socketPrincipal(r.Context(), c)
	}
	token, err := bearerToken(r.Header.Get("Authorization"))
	if err != nil {
		return engine.Principal{}, err
	}
	if strings.HasPrefix(token, engine.SessionPrefix) {
		return s.eng.SessionPrincipal(r.Context(), token)
	}
	return s.eng.Authenticate(r.Context(), token)
}

// socketPrincipal returns the principal of the socket connection c: its
// uid's actor (SocketActor), read on the connection's first request that
// needs it and kept for the later ones, which then need neither the store
// nor the user database; a failure is not kept, so the next request tries
// again.
func (s *Server) socketPrincipal(ctx context.Context, c *connInfo) (engine.Principal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.actor == "" {
		actor, err := SocketActor(ctx, s.eng, c.uid, s.lookupUsername)
		if err != nil {
			return engine.Principal{}, err
		}
		c.actor = actor
	}
	return engine.Principal{Actor: c.actor, Admin: c.admin}, nil
}

// bearerToken returns the credential of an Authorization header of the
// form "Bearer <credential>", or CodeUnauthenticated.
func bearerToken(authz string) (string, error) {
	if authz == "" {
		return "", engine.Errorf(engine.CodeUnauthenticated, "this request needs an Authorization: Bearer token (create one with POST /api/v1/tokens on the Unix socket) or a browser session (reservectl login-link)")
	}
	scheme, token, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", engine.Errorf(engine.CodeUnauthenticated, "the Authorization header must have the form \"Bearer <token>\"")
	}
	return strings.TrimSpace(token), nil
}
