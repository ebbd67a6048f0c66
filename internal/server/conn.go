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

	"github.com/reserve/reserve/internal/connlimit"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/framing"
	"github.com/reserve/reserve/internal/peercred"
)

// connInfo is what the server knows about a connection before it reads a
// request: which listener accepted it and, on the Unix socket, who is on the
// other end according to the kernel.
type connInfo struct {
	socket   bool             // Accepted by the Unix socket listener.
	loopback bool             // Accepted by a TCP listener bound to a loopback address.
	peer     engine.Principal // The socket peer, valid when peerErr is nil.
	peerErr  error
	framing  *framing.Conn // Follows the framing of the requests read; nil outside serve.
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

// socketConnContext derives the actor of a Unix socket connection once, from
// the peer credentials read when it was accepted.
func (s *Server) socketConnContext(ctx context.Context, c net.Conn) context.Context {
	info := &connInfo{socket: true}
	info.framing, _ = c.(*framing.Conn)
	switch pc := peerOf(c); {
	case pc == nil:
		info.peerErr = errors.New("read peer credentials: not a connection of the Unix socket listener")
	case pc.err != nil:
		info.peerErr = pc.err
	default:
		info.peer = SocketPrincipal(pc.cred.UID, s.daemonUID, lookupUsername)
		info.peer.Admin = pc.admin
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

// SocketPrincipal names the peer of a Unix socket connection: actor
// "unix-<username>" when the uid has a name that makes a valid actor, else
// "uid-<n>"; an admin when uid is 0 or the daemon's own uid.
func SocketPrincipal(uid uint32, daemonUID int, lookup func(uid uint32) (string, error)) engine.Principal {
	actor := "uid-" + strconv.FormatUint(uint64(uid), 10)
	if name, err := lookup(uid); err == nil && engine.ValidateActor("unix-"+name) == nil {
		actor = "unix-" + name
	}
	return engine.Principal{Actor: actor, Admin: SocketAdmin(peercred.Cred{UID: uid}, daemonUID, nil)}
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
		return c.peer, nil
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
