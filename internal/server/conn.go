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

	"github.com/reserve/reserve/internal/connlimit"
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

// peerListener reads the credentials of every Unix socket peer once, as
// its connection is accepted: the connection cap counts the connection
// against its uid (socketOwner) before anything is read from it, and
// socketConnContext names its actor from the same record.
type peerListener struct {
	net.Listener
	s *Server
}

// Accept returns the next connection as a *peerConn.
func (l peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &peerConn{Conn: c}
	// The supplementary groups (SO_PEERGROUPS, Linux 4.13 and later) are
	// read only when they decide something.
	if len(l.s.adminGIDs) > 0 {
		pc.cred, pc.err = peercred.Get(c)
	} else {
		pc.cred.UID, pc.err = peercred.UID(c)
	}
	if pc.err != nil {
		pc.err = fmt.Errorf("read peer credentials: %w", pc.err)
	} else {
		pc.admin = SocketAdmin(pc.cred, l.s.daemonUID, l.s.adminGIDs)
	}
	return pc, nil
}

// peerConn is a Unix socket connection with what the kernel recorded of
// its peer.
type peerConn struct {
	net.Conn
	cred  peercred.Cred
	err   error // Reading cred failed.
	admin bool  // The peer is an admin (SocketAdmin).
}

// CloseWrite shuts down the writing side; net/http does that before it
// closes a connection after an error answer.
func (c *peerConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// peerOf returns the *peerConn under c, nil if there is none.
func peerOf(c net.Conn) *peerConn {
	if fc, ok := c.(*framing.Conn); ok {
		c = fc.NetConn()
	}
	pc, _ := c.(*peerConn)
	return pc
}

// netConn returns the connection of the operating system under c, a
// connection the server accepted.
func netConn(c net.Conn) net.Conn {
	if fc, ok := c.(*framing.Conn); ok {
		c = fc.NetConn()
	}
	if pc, ok := c.(*peerConn); ok {
		c = pc.Conn
	}
	return c
}

// socketOwner names who holds a Unix socket connection, for the connection
// cap: its peer's uid, privileged when the peer is an admin. A peer whose
// credentials could not be read is an unprivileged owner of its own kind.
func socketOwner(c net.Conn) connlimit.Owner {
	pc := peerOf(c)
	if pc == nil || pc.err != nil {
		return connlimit.Owner{Key: "unknown"}
	}
	return connlimit.Owner{Key: strconv.FormatUint(uint64(pc.cred.UID), 10), Privileged: pc.admin}
}

// socketConnContext keeps who is on the other end of a Unix socket
// connection, as the listener read it from SO_PEERCRED when it accepted
// the connection: its uid and whether it is an admin. Its actor, which may
// need the store and the user database, is worked out on its first request
// that needs one.
func (s *Server) socketConnContext(ctx context.Context, c net.Conn) context.Context {
	info := &connInfo{socket: true}
	info.framing, _ = c.(*framing.Conn)
	switch pc := peerOf(c); {
	case pc == nil:
		info.peerErr = errors.New("read peer credentials: not a connection of the Unix socket listener")
	case pc.err != nil:
		info.peerErr = pc.err
	default:
		info.uid, info.admin = pc.cred.UID, pc.admin
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

// SocketAdmin is the one rule for who is an admin on the Unix socket: root,
// the daemon's own uid, and the members of the admin groups
// (InAdminGroup). Admins also have connection slots of their own there,
// which no other uid can take.
func SocketAdmin(cred peercred.Cred, daemonUID int, adminGIDs []uint32) bool {
	return cred.UID == 0 || int64(cred.UID) == int64(daemonUID) || InAdminGroup(cred, adminGIDs)
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
