package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/user"
	"sort"
	"strconv"
	"time"

	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/sdnotify"
)

// The names of the listeners that socket activation may pass
// (LISTEN_FDNAMES; FileDescriptorName= in a .socket unit).
const (
	fdNameSocket = "socket"
	fdNameTCP    = "tcp"
)

// watchdogReadTimeout is how long the store may take to answer the read
// that each watchdog ping depends on.
const watchdogReadTimeout = time.Second

// inheritedListeners returns the listeners the service manager passed by
// socket activation: the Unix socket named "socket" and the TCP listener
// named "tcp", each nil when not passed. An inherited listener replaces
// --socket or --listen; its file belongs to the service manager, so the
// daemon neither locks, probes nor removes it.
func inheritedListeners() (sock *net.UnixListener, tcp *net.TCPListener, err error) {
	files, err := sdnotify.Listeners()
	if err != nil {
		return nil, nil, &exitError{code: ExitUsage, err: fmt.Errorf("socket activation: %w", err)}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	fail := func(err error) (*net.UnixListener, *net.TCPListener, error) {
		for _, f := range files {
			f.Close()
		}
		if sock != nil {
			sock.Close()
		}
		if tcp != nil {
			tcp.Close()
		}
		return nil, nil, &exitError{code: ExitUsage, err: err}
	}
	for _, name := range names {
		f := files[name]
		delete(files, name)
		if name != fdNameSocket && name != fdNameTCP {
			f.Close()
			return fail(fmt.Errorf("socket activation passed a listener named %q: reserved takes only %q (the Unix socket) and %q (the TCP listener); set FileDescriptorName= in the socket unit", name, fdNameSocket, fdNameTCP))
		}
		ln, err := sdnotify.Listener(f)
		if err != nil {
			return fail(fmt.Errorf("socket activation: listener %q: %w", name, err))
		}
		switch l := ln.(type) {
		case *net.UnixListener:
			if name == fdNameSocket {
				sock = l
				continue
			}
		case *net.TCPListener:
			if name == fdNameTCP {
				tcp = l
				continue
			}
		}
		ln.Close()
		want := "a Unix stream socket"
		if name == fdNameTCP {
			want = "a TCP socket"
		}
		return fail(fmt.Errorf("socket activation: listener %q is a %s socket on %s, not %s", name, ln.Addr().Network(), ln.Addr(), want))
	}
	return sock, tcp, nil
}

// lookupGroup returns the gid of the group --admin-group names, by name
// or by number.
func lookupGroup(name string) (uint32, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		if _, numeric := strconv.ParseUint(name, 10, 32); numeric == nil {
			g, err = user.LookupGroupId(name)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("--admin-group %q: %w", name, err)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("--admin-group %q: gid %q is not a number", name, g.Gid)
	}
	return uint32(gid), nil
}

// serviceNotifier tells the service manager about the daemon: READY=1
// once it serves, WATCHDOG=1 while its store answers reads, STOPPING=1
// when it shuts down. Without NOTIFY_SOCKET it does nothing.
type serviceNotifier struct {
	n        *sdnotify.Notifier
	logger   *slog.Logger
	interval time.Duration // Of the watchdog pings; 0 for none.
	stop     context.CancelFunc
	done     chan struct{}
}

func newServiceNotifier(logger *slog.Logger) (*serviceNotifier, error) {
	n, err := sdnotify.New()
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	interval, err := sdnotify.WatchdogInterval()
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	if !n.Enabled() {
		interval = 0
	}
	return &serviceNotifier{n: n, logger: logger, interval: interval}, nil
}

func (s *serviceNotifier) send(state string) {
	if err := s.n.Notify(state); err != nil {
		s.logger.Warn("could not tell the service manager", "state", state, "error", err)
	}
}

// ready sends READY=1 and starts the watchdog pings. Each ping is sent
// only after the store has answered a read within watchdogReadTimeout, so
// that the service manager restarts a daemon whose store hangs.
func (s *serviceNotifier) ready(eng *engine.Engine) {
	s.send(sdnotify.Ready)
	if s.interval == 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stop, s.done = stop, make(chan struct{})
	s.logger.Info("sending watchdog pings to the service manager", "interval", s.interval)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(s.interval)
		defer tick.Stop()
		for {
			if err := eng.Ping(ctx, watchdogReadTimeout); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.logger.Error("no watchdog ping: the store does not answer reads", "error", err)
			} else {
				s.send(sdnotify.Watchdog)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// stopping stops the watchdog pings and sends STOPPING=1.
func (s *serviceNotifier) stopping() {
	if s.stop != nil {
		s.stop()
		<-s.done
		s.stop = nil
	}
	s.send(sdnotify.Stopping)
}
