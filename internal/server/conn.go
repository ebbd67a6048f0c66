package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/user"
	"slices"
	"strconv"
	"strings"

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

// socketConnContext derives the actor of a Unix socket connection once, from
// SO_PEERCRED, when the connection is accepted.
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
		info.peer = SocketPrincipal(cred.UID, s.daemonUID, lookupUsername)
		info.peer.Admin = info.peer.Admin || InAdminGroup(cred, s.adminGIDs)
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
	return engine.Principal{Actor: actor, Admin: uid == 0 || int64(uid) == int64(daemonUID)}
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
