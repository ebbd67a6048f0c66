package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/boltstore"
	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/engine"
	"github.com/reserve/reserve/internal/seed"
	"github.com/reserve/reserve/internal/server/servertest"
)

// loadAnswer is one authoritative answer a load client got.
type loadAnswer struct {
	key    engine.OperationKey
	req    engine.Request
	status int
	body   []byte
}

// answers collects the answers of concurrent load clients.
type answers struct {
	mu   sync.Mutex
	list []loadAnswer
}

func (a *answers) add(x loadAnswer) {
	a.mu.Lock()
	a.list = append(a.list, x)
	a.mu.Unlock()
}

func (a *answers) snapshot() []loadAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]loadAnswer(nil), a.list...)
}

// TestBackupUnderLoadRestoresRecordedKeys takes a backup with reservectl
// admin backup while eight clients keep reserving, checks it with reserved
// check, starts a new daemon on it, and replays every key that was answered
// before the backup began: each gets its original status and byte-identical
// body, marked replayed. A key first used after the backup is unknown to the
// restored daemon.
func TestBackupUnderLoadRestoresRecordedKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := start(t, dir, socket, "--no-demo")
	c := p.socketClient()
	for id, capacity := range map[string]int{"w-big": 1_000_000, "w-tiny": 20} {
		if _, _, err := c.PutWorkshop(ctx, id, engine.WorkshopSpec{Capacity: capacity, MaxQuantity: 2}, nil); err != nil {
			t.Fatal(err)
		}
	}

	var got answers
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			lc := &client.Client{Socket: socket}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				req := engine.Request{Workshop: "w-big", Quantity: 1 + n%2}
				if (i+n)%5 == 0 {
					req = engine.Request{Workshop: "w-tiny", Quantity: 1}
				}
				key := engine.OperationKey(uuid.NewString())
				status, body, _, err := lc.Reserve(ctx, key, req)
				if err != nil {
					t.Errorf("load: reserve: %v", err)
					return
				}
				got.add(loadAnswer{key: key, req: req, status: status, body: body})
			}
		})
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	servertest.Eventually(t, startTimeout, "300 answers under load", func() bool { return len(got.snapshot()) >= 300 })

	before := got.snapshot()
	backup := filepath.Join(dir, "backup.db")
	var stdout, stderr bytes.Buffer
	if code := cli.Run(ctx, []string{"--socket", socket, "admin", "backup", backup}, &stdout, &stderr); code != 0 {
		t.Fatalf("reservectl admin backup exited %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "wrote a consistent backup of reserved to "+backup) {
		t.Errorf("backup said %q", stdout.String())
	}
	during := len(got.snapshot()) - len(before)
	// One key surely first used after the snapshot was taken.
	afterKey := engine.OperationKey(uuid.NewString())
	if status, body, _, err := c.Reserve(ctx, afterKey, engine.Request{Workshop: "w-big", Quantity: 1}); err != nil || status != http.StatusCreated {
		t.Fatalf("reserve after the backup = %d %s %v", status, body, err)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d answers before the backup, %d while it ran, %d in all", len(before), during, len(got.snapshot()))
	if code := p.stop(t); code != 0 {
		t.Fatalf("reserved exited %d", code)
	}

	out, err := exec.Command(reservedBin, "check", "--db", backup).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no findings") {
		t.Fatalf("reserved check --db %s: %v\n%s", backup, err, out)
	}

	// Restore: a new daemon on a copy of the backup.
	restored := t.TempDir()
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "reserved.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	socket2 := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p2 := start(t, restored, socket2, "--no-demo")
	c2 := p2.socketClient()
	for _, a := range before {
		status, body, replayed, err := c2.Reserve(ctx, a.key, a.req)
		if err != nil || status != a.status || !replayed || !bytes.Equal(body, a.body) {
			t.Fatalf("key %s after the restore = %d %s replayed=%v %v, want the original %d %s", a.key, status, body, replayed, err, a.status, a.body)
		}
	}
	if _, err := c2.Operation(ctx, afterKey); engine.ErrorCode(err) != engine.CodeUnknownOperation {
		t.Errorf("a key first used after the backup: GET operation = %v, want unknown_operation", err)
	}
	if code := p2.stop(t); code != 0 {
		t.Fatalf("restored reserved exited %d", code)
	}
	if out, err := exec.Command(reservedBin, "check", "--db", filepath.Join(restored, "reserved.db")).CombinedOutput(); err != nil {
		t.Fatalf("reserved check after the replays: %v\n%s", err, out)
	}
}

// backupSeeded is how many reservations seedBackupDatabase makes.
const backupSeeded = 13_000

// seedBackupDatabase writes at path a new database with backupSeeded
// reservations, before a daemon opens it. It was seeded while bbolt mapped
// only the file, so that the file ends at the 16 MiB that bbolt maps for it,
// most of them in use: its snapshot is larger than what the loopback
// sockets of a backup buffer, and a thousand or two more reservations make
// it outgrow a map of its size.
func seedBackupDatabase(t *testing.T, path string) {
	t.Helper()
	data, err := backupSeed()
	if err != nil {
		t.Fatalf("seed the backup database: %v", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if size := fileSize(t, path); size != 16<<20 {
		t.Fatalf("the seeded database has %d bytes, want the 16 MiB of its map", size)
	}
}

// backupSeed returns the database of seedBackupDatabase, seeded once per
// test binary: seeding takes seconds under the race detector.
var backupSeed = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "backup-seed")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "reserved.db")
	st, err := boltstore.Open(path, boltstore.Options{InitialMmapSize: -1})
	if err != nil {
		return nil, err
	}
	if err := seed.Run(context.Background(), engine.New(st), seed.Plan{Workshops: []string{"seeded"}, PerWorkshop: backupSeeded}); err != nil {
		st.Close()
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// mappedBytes returns how many bytes of the file at path process pid has
// mapped, from /proc/PID/maps.
func mappedBytes(t *testing.T, pid int, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.Lines(string(data)) {
		// address perms offset dev inode pathname
		f := strings.Fields(line)
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		var lo, hi int64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err != nil {
			t.Fatalf("/proc/%d/maps: %q: %v", pid, line, err)
		}
		n += hi - lo
	}
	return n
}

// TestSlowBackupOfAGrowingDatabaseKeepsServing reads a backup over TCP at
// 4 KiB/s while sixteen clients reserve and the database grows: no two
// seconds of the backup pass without a completed reservation, and the
// backup is a consistent database holding every reservation answered
// before it was asked for and none answered after it was read. It runs
// with the default initial map, which the file never outgrows, and with
// --initial-mmap-mib 0, where bbolt must remap the growing file while the
// backup is being read: that cannot wait for the end of a read transaction
// that a slow reader keeps open.
func TestSlowBackupOfAGrowingDatabaseKeepsServing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: this test reads the daemon's memory map from Linux's /proc")
	}
	for _, tc := range []struct {
		name  string
		flags []string
		remap bool // The daemon must remap the file during the backup.
	}{
		{"default map", nil, false},
		{"no initial map", []string{"--initial-mmap-mib", "0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { slowBackupOfAGrowingDatabase(t, tc.flags, tc.remap) })
	}
}

func slowBackupOfAGrowingDatabase(t *testing.T, flags []string, remap bool) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "reserved.db")
	seedBackupDatabase(t, db)
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := start(t, dir, socket, append([]string{"--no-demo"}, flags...)...)
	admin := p.socketClient()
	if _, _, err := admin.PutWorkshop(ctx, "load", engine.WorkshopSpec{Capacity: 10_000_000, MaxQuantity: 1}, nil); err != nil {
		t.Fatal(err)
	}
	token, err := admin.CreateToken(ctx, "backup-admin", true)
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu   sync.Mutex
		done []time.Time // When each reservation was answered.
	)
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(done)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			lc := &client.Client{Socket: socket}
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, body, _, err := lc.Reserve(ctx, engine.OperationKey(uuid.NewString()), engine.Request{Workshop: "load", Quantity: 1})
				if err != nil || status != http.StatusCreated {
					t.Errorf("reserve = %d %s %v", status, body, err)
					return
				}
				mu.Lock()
				done = append(done, time.Now())
				mu.Unlock()
			}
		})
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()
	servertest.Eventually(t, startTimeout, "200 reservations under load", func() bool { return answered() >= 200 })

	pid := p.cmd.Process.Pid
	mapBefore := mappedBytes(t, pid, db)
	before := answered()
	began := time.Now()
	snapshot := slowBackup(t, p.url, token, 10*time.Second)
	ended := time.Now()
	after := answered()
	mapAfter := mappedBytes(t, pid, db)
	stopLoad()
	t.Logf("backup of %d bytes read in %v; %d reservations answered meanwhile; the map of the database went from %d to %d bytes",
		len(snapshot), ended.Sub(began).Round(time.Millisecond), after-before, mapBefore, mapAfter)
	switch {
	case remap && mapAfter <= mapBefore:
		t.Errorf("the database's map stayed at %d bytes during the backup: the test did not make the file outgrow it", mapAfter)
	case !remap && (mapBefore != int64(boltstore.DefaultInitialMmapSize()) || mapAfter != mapBefore):
		t.Errorf("the database's map went from %d to %d bytes, want the default initial map of %d throughout", mapBefore, mapAfter, boltstore.DefaultInitialMmapSize())
	}

	// The longest time without an answered reservation while the backup ran.
	mu.Lock()
	times := slices.Clone(done)
	mu.Unlock()
	slices.SortFunc(times, time.Time.Compare)
	last, worst, worstAt := began, time.Duration(0), began
	for _, at := range append(times, ended) {
		if at.Before(began) {
			continue
		}
		if at.After(ended) {
			at = ended
		}
		if gap := at.Sub(last); gap > worst {
			worst, worstAt = gap, last
		}
		last = at
	}
	if worst >= 2*time.Second {
		t.Errorf("no reservation was answered for %v, from %v into the backup", worst.Round(time.Millisecond), worstAt.Sub(began).Round(time.Millisecond))
	}

	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(reservedBin, "check", "--db", path).CombinedOutput(); err != nil || !strings.Contains(string(out), "no findings") {
		t.Fatalf("reserved check --db %s: %v\n%s", path, err, out)
	}
	st, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng := engine.New(st)
	for _, want := range []struct {
		id     string
		lo, hi int
	}{{"seeded", backupSeeded, backupSeeded}, {"load", before, after}} {
		w, err := eng.Workshop(ctx, want.id)
		if err != nil || w.Reserved < want.lo || w.Reserved > want.hi {
			t.Errorf("the backup's workshop %s has %d reserved (%v), want %d to %d", want.id, w.Reserved, err, want.lo, want.hi)
		}
	}
}

// fileSize returns the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// slowBackup asks the daemon at baseURL for a backup on a raw TCP
// connection with a 4 KiB receive buffer and reads the answer in 512-byte
// pieces at 4 KiB/s for slowFor, then the rest at full speed. It returns the
// body after checking that it has the announced length.
func slowBackup(t *testing.T, baseURL, token string, slowFor time.Duration) []byte {
	t.Helper()
	conn := dialBackup(t, baseURL, token)
	defer conn.Close()
	slow := &throttledReader{r: conn, rate: 4 << 10, piece: 512, start: time.Now()}
	slow.until = slow.start.Add(slowFor)
	resp, err := http.ReadResponse(bufio.NewReaderSize(slow, 512), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength <= 0 {
		t.Fatalf("backup answered %s with Content-Length %d", resp.Status, resp.ContentLength)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || int64(len(body)) != resp.ContentLength {
		t.Fatalf("backup body: %d of %d bytes, %v", len(body), resp.ContentLength, err)
	}
	return body
}

// dialBackup connects to the daemon at baseURL with a 4 KiB receive buffer,
// set before connecting so that the kernel never widens it, and sends an
// admin's backup request.
func dialBackup(t *testing.T, baseURL, token string) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(baseURL, "http://")
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", api.PathBackup, addr, token); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return conn
}

// throttledReader reads at most piece bytes at a time and no faster than
// rate bytes a second until the time until, then passes reads through.
type throttledReader struct {
	r     io.Reader
	rate  int
	piece int
	start time.Time
	until time.Time
	n     int // Bytes read so far.
}

func (s *throttledReader) Read(p []byte) (int, error) {
	if time.Now().Before(s.until) {
		p = p[:min(len(p), s.piece)]
		// Pacing is the point of this reader: it waits for its next slot.
		time.Sleep(time.Until(s.start.Add(time.Duration(s.n) * time.Second / time.Duration(s.rate))))
	}
	n, err := s.r.Read(p)
	s.n += n
	return n, err
}

// TestBackupLeavesNoTemporaryFile takes a backup that completes, one whose
// client goes away after the first bytes, and one that fails because the
// database's directory has moved away: the daemon keeps each snapshot in an
// open file without a name while it sends it, and afterwards has no such
// file open and none left beside the database.
func TestBackupLeavesNoTemporaryFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: this test reads the daemon's open files from Linux's /proc")
	}
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dataDir, "reserved.db")
	seedBackupDatabase(t, db) // Larger than the sockets buffer, so that a client can leave mid-way.
	socket := filepath.Join(servertest.ShortTempDir(t), "r.sock")
	p := start(t, dataDir, socket, "--no-demo")
	token, err := p.socketClient().CreateToken(ctx, "backup-admin", true)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	noTrace := func(what string) {
		t.Helper()
		servertest.Eventually(t, startTimeout, "the snapshot file closed after "+what, func() bool { return len(daemonSnapshots(t, pid, db)) == 0 })
		if names := dirNames(t, dataDir); !slices.Equal(names, []string{"reserved.db"}) {
			t.Errorf("after %s the database's directory holds %v", what, names)
		}
	}

	var out bytes.Buffer
	if n, err := p.tcpClient(token).Backup(ctx, &out); err != nil || n != int64(out.Len()) {
		t.Fatalf("backup = %d bytes, %v", n, err)
	}
	noTrace("a backup")

	conn := dialBackup(t, p.url, token)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("backup answered %v %v", resp, err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	open := daemonSnapshots(t, pid, db)
	if len(open) != 1 || !strings.HasSuffix(open[0], " (deleted)") {
		t.Errorf("while a backup is sent the daemon has %v open, want one removed snapshot file", open)
	}
	if names := dirNames(t, dataDir); !slices.Equal(names, []string{"reserved.db"}) {
		t.Errorf("while a backup is sent the database's directory holds %v", names)
	}
	conn.Close()
	noTrace("a backup whose client went away")

	moved := dataDir + "-moved"
	if err := os.Rename(dataDir, moved); err != nil {
		t.Fatal(err)
	}
	_, err = p.tcpClient(token).Backup(ctx, io.Discard)
	if err := os.Rename(moved, dataDir); err != nil {
		t.Fatal(err)
	}
	if engine.ErrorCode(err) != engine.CodeInternal {
		t.Errorf("backup without the database's directory = %v, want 500 internal", err)
	}
	// The request's log line is written after its answer is sent.
	var logged map[string]any
	servertest.Eventually(t, 10*time.Second, "the failed backup's log line", func() bool {
		logged = p.logs.Find("request", "route", "GET /api/v1/admin/backup", "code", engine.CodeInternal)
		return logged != nil
	})
	if msg, _ := logged["error"].(string); !strings.Contains(msg, "create the snapshot file") {
		t.Errorf("the failed backup is logged as %v, want the reason", logged)
	}
	noTrace("a failed backup")
}

// daemonSnapshots returns what the open files of process pid that are
// backup snapshots of the database at path link to.
func daemonSnapshots(t *testing.T, pid int, path string) []string {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err == nil && strings.HasPrefix(target, path+".backup-") {
			open = append(open, target)
		}
	}
	return open
}

// dirNames lists dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
