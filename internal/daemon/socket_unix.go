//go:build unix

package daemon

import (
	"net"
	"os"
	"sync"
	"syscall"
)

// umaskMu serializes the daemon's changes of the process's umask.
var umaskMu sync.Mutex

// bindSocket listens on a new Unix socket file at path whose permissions
// are mode from the moment it exists. bind(2) creates the file with the
// permissions 0777 less the umask, so the umask is set to exactly the
// complement of mode around it: a chmod afterwards would leave a moment in
// which another user could connect. The umask belongs to the whole process;
// the daemon binds its socket before it starts anything else that creates
// files (the lifecycle's outbox, the pprof listener), so nothing else is
// created with the narrowed mask.
func bindSocket(path string, mode os.FileMode) (*net.UnixListener, error) {
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := syscall.Umask(int(^mode.Perm() & 0o777))
	defer syscall.Umask(old)
	return net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
}
