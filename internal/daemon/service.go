package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	sddaemon "github.com/coreos/go-systemd/v22/daemon"

	"github.com/reserve/reserve/internal/engine"
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
	// Every passed descriptor must be named, so that none is taken for
	// another: go-systemd would name an unnamed one LISTEN_FD_<n>.
	named := checkListenNames()
	files := activation.Files(true)
	fail := func(err error) (*net.UnixListener, *net.TCPListener, error) {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
		if sock != nil {
			sock.Close()
		}
		if tcp != nil {
			tcp.Close()
		}
		return nil, nil, &exitError{code: ExitUsage, err: err}
	}
	if named != nil {
		return fail(fmt.Errorf("socket activation: %w", named))
	}
	seen := map[string]bool{}
	for i, f := range files {
		name := f.Name()
		files[i] = nil
		if seen[name] {
			f.Close()
			return fail(fmt.Errorf("socket activation: LISTEN_FDNAMES names %q twice", name))
		}
		seen[name] = true
		if name != fdNameSocket && name != fdNameTCP {
			f.Close()
			return fail(fmt.Errorf("socket activation passed a listener named %q: reserved takes only %q (the Unix socket) and %q (the TCP listener); set FileDescriptorName= in the socket unit", name, fdNameSocket, fdNameTCP))
		}
		ln, err := listenerOf(f)
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

// checkListenNames fails when socket activation passes this process
// descriptors that LISTEN_FDNAMES does not name one by one.
func checkListenNames() error {
	if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		return nil
	}
	fds, names := os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return fmt.Errorf("LISTEN_FDS=%q is not a number of file descriptors", fds)
	}
	var list []string
	if names != "" {
		list = strings.Split(names, ":")
	}
	if len(list) != n {
		return fmt.Errorf("LISTEN_FDS=%d passes %d file descriptors but LISTEN_FDNAMES=%q names %d; name each one (FileDescriptorName= or systemd-socket-activate --fdname)", n, n, names, len(list))
	}
	return nil
}

// listenerOf returns the listening socket of an inherited file, which it
// closes: an error if the file is not a socket or not listening.
func listenerOf(f *os.File) (net.Listener, error) {
	defer f.Close()
	if err := checkListening(f); err != nil {
		return nil, err
	}
	return net.FileListener(f)
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
	logger   *slog.Logger
	interval time.Duration // Of the watchdog pings; 0 for none.
	stop     context.CancelFunc
	done     chan struct{}
}

func newServiceNotifier(logger *slog.Logger) (*serviceNotifier, error) {
	// The service manager wants a ping within WATCHDOG_USEC; one every
	// half of it keeps one late ping from missing the deadline.
	watchdog, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("watchdog: %w", err)}
	}
	interval := watchdog / 2
	if os.Getenv("NOTIFY_SOCKET") == "" {
		interval = 0
	}
	return &serviceNotifier{logger: logger, interval: interval}, nil
}

func (s *serviceNotifier) send(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		s.logger.Warn("could not tell the service manager", "state", state, "error", err)
	}
}

// ready sends READY=1 and starts the watchdog pings. Each ping is sent
// only after the store has answered a read within watchdogReadTimeout, so
// that the service manager restarts a daemon whose store hangs.
func (s *serviceNotifier) ready(eng *engine.Engine) {
	s.send(sddaemon.SdNotifyReady)
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
				s.send(sddaemon.SdNotifyWatchdog)
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
	s.send(sddaemon.SdNotifyStopping)
}
