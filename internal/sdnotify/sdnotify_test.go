package sdnotify

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestNotifyAbstractSocket: a NOTIFY_SOCKET starting with '@' names a
// socket in the abstract namespace, and a state arrives as one datagram.
func TestNotifyAbstractSocket(t *testing.T) {
	name := "@reserve-sdnotify-test-" + strconv.Itoa(os.Getpid())
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv(EnvNotifySocket, name)
	n, err := New()
	if err != nil || !n.Enabled() {
		t.Fatalf("New = %v %v", n, err)
	}
	if err := n.Notify(Ready); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	k, err := conn.Read(buf)
	if err != nil || string(buf[:k]) != Ready {
		t.Errorf("received %q %v, want %q", buf[:k], err, Ready)
	}
}

// TestNotifyUnset: without NOTIFY_SOCKET nothing is sent and nothing fails;
// an address that is not a Unix socket is an error.
func TestNotifyUnset(t *testing.T) {
	t.Setenv(EnvNotifySocket, "")
	n, err := New()
	if err != nil || n.Enabled() || n.Notify(Ready) != nil {
		t.Errorf("New without NOTIFY_SOCKET = %v %v", n, err)
	}
	t.Setenv(EnvNotifySocket, "vsock:2:1234")
	if _, err := New(); err == nil {
		t.Error("New accepted a vsock address")
	}
}

// TestWatchdogInterval: half of WATCHDOG_USEC, none for another pid, an
// error for a value that is not a positive number or too large for a
// duration.
func TestWatchdogInterval(t *testing.T) {
	for _, tt := range []struct {
		usec, pid string
		want      time.Duration
		fails     bool
	}{
		{"", "", 0, false},
		{"2000000", "", time.Second, false},
		{"2000000", strconv.Itoa(os.Getpid()), time.Second, false},
		{"2000000", "1", 0, false},
		{"0", "", 0, true},
		{"soon", "", 0, true},
		{"9223372036854775", "", 9223372036854775 * time.Microsecond / 2, false},
		{"9223372036854776", "", 0, true}, // Would overflow a Duration.
	} {
		t.Setenv(EnvWatchdogUSec, tt.usec)
		t.Setenv(EnvWatchdogPID, tt.pid)
		got, err := WatchdogInterval()
		if got != tt.want || (err != nil) != tt.fails {
			t.Errorf("WatchdogInterval with %q, pid %q = %v %v", tt.usec, tt.pid, got, err)
		}
	}
}

// TestListenersNotOurs: variables for another pid are ignored and
// unset; a count that the names do not match is an error.
func TestListenersNotOurs(t *testing.T) {
	t.Setenv(EnvListenPID, "1")
	t.Setenv(EnvListenFDs, "1")
	t.Setenv(EnvListenNames, "socket")
	files, err := Listeners()
	if files != nil || err != nil {
		t.Errorf("Listeners for pid 1 = %v %v", files, err)
	}
	if _, set := os.LookupEnv(EnvListenFDs); set {
		t.Error("LISTEN_FDS is still set")
	}
	t.Setenv(EnvListenPID, strconv.Itoa(os.Getpid()))
	t.Setenv(EnvListenFDs, "2")
	t.Setenv(EnvListenNames, "socket")
	if _, err := Listeners(); err == nil {
		t.Error("Listeners accepted 2 descriptors with 1 name")
	}
}
