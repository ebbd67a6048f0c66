package daemon

import "fmt"

// The default connection caps of the listeners.
const (
	defaultMaxTCPConns    = 2048
	defaultMaxSocketConns = 256
)

// fdReserve is how many file descriptors the connection caps leave free
// within the open file limit, for everything else the daemon opens: the
// database file and its lock, the listeners, the outbox's deliveries, a
// backup being written, PostgreSQL's connection pool, the Go runtime's
// own. With them free, a flood of connections cannot starve the database,
// and the socket, the administrator's way in, has a cap of its own.
const fdReserve = 128

// connCaps are the connection caps of the listeners.
type connCaps struct {
	tcp, socket int
	lowered     bool // The defaults were lowered to fit the open file limit.
}

// fitConnCaps checks the caps asked for against the open file limit (0:
// unknown). Caps given explicitly must fit, with fdReserve descriptors to
// spare; defaults are lowered until they do, the socket keeping up to a
// quarter of the room. Without TCP only the socket's cap counts.
func fitConnCaps(limit uint64, tcp, socket int, tcpGiven, socketGiven, tcpOn bool) (connCaps, error) {
	if !tcpOn {
		tcp, tcpGiven = 0, true
	}
	caps := connCaps{tcp: tcp, socket: socket}
	if limit == 0 || uint64(tcp)+uint64(socket)+fdReserve <= limit {
		return caps, nil
	}
	if limit < fdReserve+2 {
		return connCaps{}, fmt.Errorf("the open file limit (RLIMIT_NOFILE) of %d leaves no room for connections, as reserved keeps %d files for the database and its other files: raise it (ulimit -n, systemd LimitNOFILE=)", limit, fdReserve)
	}
	tooMany := func(what string, args ...any) error {
		return fmt.Errorf("%s in the open file limit (RLIMIT_NOFILE) of %d, of which reserved keeps %d files for the database and its other files: lower the cap or raise the limit (ulimit -n, systemd LimitNOFILE=)", fmt.Sprintf(what, args...), limit, fdReserve)
	}
	room := int(limit - fdReserve)
	caps.lowered = true
	switch {
	case tcpGiven && socketGiven && tcpOn:
		return connCaps{}, tooMany("--max-tcp-connections %d and --max-socket-connections %d do not fit", tcp, socket)
	case tcpGiven && socketGiven:
		return connCaps{}, tooMany("--max-socket-connections %d does not fit", socket)
	case tcpGiven:
		if caps.socket = room - tcp; caps.socket < 1 {
			return connCaps{}, tooMany("--max-tcp-connections %d leaves no room for socket connections", tcp)
		}
	case socketGiven:
		if caps.tcp = room - socket; caps.tcp < 1 {
			return connCaps{}, tooMany("--max-socket-connections %d leaves no room for TCP connections", socket)
		}
	default:
		caps.socket = min(socket, max(room/4, 1))
		caps.tcp = min(tcp, room-caps.socket)
	}
	return caps, nil
}
