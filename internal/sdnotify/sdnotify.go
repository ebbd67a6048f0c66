// Package sdnotify speaks the service manager's side channels of systemd:
// the notification socket (READY=1, STOPPING=1, WATCHDOG=1) and socket
// activation (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES).
//
// It is a few lines of the standard library rather than a dependency: a
// notification is one datagram to a Unix socket and an inherited listener
// is a numbered file descriptor, neither needs cgo or libsystemd, and the
// daemon already owns its socket code and the rules for its listeners.
package sdnotify

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The environment variables of the protocols.
const (
	EnvNotifySocket = "NOTIFY_SOCKET"
	EnvWatchdogUSec = "WATCHDOG_USEC"
	EnvWatchdogPID  = "WATCHDOG_PID"
	EnvListenPID    = "LISTEN_PID"
	EnvListenFDs    = "LISTEN_FDS"
	EnvListenNames  = "LISTEN_FDNAMES"
)

// The states a daemon reports.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
	Watchdog = "WATCHDOG=1"
)

// Notifier sends state changes to the service manager. The zero Notifier,
// and one made where NOTIFY_SOCKET is unset, sends nothing.
type Notifier struct {
	addr *net.UnixAddr
}

// New returns the notifier that NOTIFY_SOCKET names. A leading '@' names a
// socket in the abstract namespace. Only Unix sockets are supported; any
// other address (such as vsock:) is an error.
func New() (*Notifier, error) {
	path := os.Getenv(EnvNotifySocket)
	if path == "" {
		return &Notifier{}, nil
	}
	if path[0] != '/' && path[0] != '@' {
		return nil, fmt.Errorf("%s=%q: only a Unix socket path or an abstract name starting with '@' is supported", EnvNotifySocket, path)
	}
	return &Notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}, nil
}

// Enabled reports whether the notifier sends anything.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Notify sends state, one or more newline-separated assignments such as
// Ready, to the service manager.
func (n *Notifier) Notify(state string) error {
	if !n.Enabled() {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("notify %s: %w", n.addr.Name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify %s: %w", n.addr.Name, err)
	}
	return nil
}

// WatchdogInterval returns how often the service manager wants WATCHDOG=1
// from this process: half of WATCHDOG_USEC, so that one late ping does not
// miss the deadline. It returns 0 when no watchdog is asked for, or when
// WATCHDOG_PID names another process.
func WatchdogInterval() (time.Duration, error) {
	usec := os.Getenv(EnvWatchdogUSec)
	if usec == "" {
		return 0, nil
	}
	if pid := os.Getenv(EnvWatchdogPID); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 || n > math.MaxInt64/uint64(time.Microsecond) {
		return 0, fmt.Errorf("%s=%q is not a positive number of microseconds", EnvWatchdogUSec, usec)
	}
	return time.Duration(n) * time.Microsecond / 2, nil
}

// listenFDsStart is the first inherited file descriptor (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// Listeners returns the files the service manager passed by socket
// activation, by their names in LISTEN_FDNAMES, or nil when LISTEN_PID does
// not name this process. The files are the caller's to close. It unsets the
// variables, so that the processes the daemon starts do not take the
// descriptors for their own.
func Listeners() (map[string]*os.File, error) {
	pid, fds, names := os.Getenv(EnvListenPID), os.Getenv(EnvListenFDs), os.Getenv(EnvListenNames)
	os.Unsetenv(EnvListenPID)
	os.Unsetenv(EnvListenFDs)
	os.Unsetenv(EnvListenNames)
	if pid == "" || pid != strconv.Itoa(os.Getpid()) {
		return nil, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s=%q is not a number of file descriptors", EnvListenFDs, fds)
	}
	var list []string
	if names != "" {
		list = strings.Split(names, ":")
	}
	if len(list) != n {
		return nil, fmt.Errorf("%s=%d passes %d file descriptors but %s=%q names %d; name each one (FileDescriptorName= or systemd-socket-activate --fdname)", EnvListenFDs, n, n, EnvListenNames, names, len(list))
	}
	files := make(map[string]*os.File, n)
	for i, name := range list {
		fd := listenFDsStart + i
		if _, dup := files[name]; dup {
			return nil, errors.Join(fmt.Errorf("%s names %q twice", EnvListenNames, name), closeAll(files))
		}
		setCloseOnExec(fd)
		files[name] = os.NewFile(uintptr(fd), name)
	}
	return files, nil
}

// Listener returns the listening socket of an inherited file, which it
// closes: an error if the file is not a socket or not listening.
func Listener(f *os.File) (net.Listener, error) {
	defer f.Close()
	if err := checkListening(f); err != nil {
		return nil, err
	}
	return net.FileListener(f)
}

func closeAll(files map[string]*os.File) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
