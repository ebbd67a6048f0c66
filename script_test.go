package reserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/reserve/reserve/internal/api"
	"github.com/reserve/reserve/internal/cli"
	"github.com/reserve/reserve/internal/client"
	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/engine"
)

// pollTimeout bounds every wait of a script for a condition; the conditions
// come true in milliseconds, the bound only ends a hung script clearly.
const pollTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"reserved":   func() { os.Exit(daemon.Main()) },
		"reservectl": func() { os.Exit(cli.Main()) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/scripts: real reserved
// and reservectl processes, every one confined to the script's $WORK.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/scripts",
		Setup:               setupScript,
		Condition:           scriptCondition,
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitready":      cmdWaitReady,
			"expectexit":     cmdExpectExit,
			"places":         cmdPlaces,
			"waitplaces":     cmdWaitPlaces,
			"fault":          cmdFault,
			"capture":        cmdCapture,
			"freeport":       cmdFreePort,
			"waitattempts":   cmdWaitAttempts,
			"race":           cmdRace,
			"waitexpired":    cmdWaitExpired,
			"waitdeliveries": cmdWaitDeliveries,
			"waitplan":       cmdWaitPlan,
			"chown":          cmdChown,
			"mkfifo":         cmdMkfifo,
			"mkpublicdir":    cmdMkpublicdir,
		},
	})
}

// envKeys is the key under which Setup stores the names of the variables it
// set, so that cmdRace can hand the same environment to its processes.
type envKeys struct{}

// setupScript confines HOME, the XDG directories, the daemon's database and
// socket and reservectl's state file to the script. The socket lives in a
// short directory under /tmp because a Unix socket path must stay below 108
// bytes and $WORK can be longer.
func setupScript(env *testscript.Env) error {
	short, err := os.MkdirTemp("/tmp", "rs")
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	env.Defer(func() { os.RemoveAll(short) })
	work := env.WorkDir
	vars := map[string]string{
		"HOME":             filepath.Join(work, "home"),
		"XDG_CONFIG_HOME":  filepath.Join(work, "home", ".config"),
		"XDG_CACHE_HOME":   filepath.Join(work, "home", ".cache"),
		"XDG_DATA_HOME":    filepath.Join(work, "home", ".local", "share"),
		"XDG_STATE_HOME":   filepath.Join(work, "home", ".local", "state"),
		"XDG_RUNTIME_DIR":  short,
		"RESERVED_SOCKET":  filepath.Join(short, "d.sock"),
		"RESERVED_DB":      filepath.Join(work, "reserved.db"),
		"RESERVED_LISTEN":  "", // No TCP unless a script asks for it.
		"RESERVED_CONFIG":  "", // No configuration file unless a script names one.
		"RESERVECTL_STATE": filepath.Join(work, "state", "intent.json"),
		// Race-enabled programs otherwise linger a second at every exit.
		"GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0"),
	}
	for k, v := range vars {
		env.Setenv(k, v)
	}
	names := []string{"PATH", "TMPDIR", "WORK"}
	for k := range vars {
		names = append(names, k)
	}
	env.Values[envKeys{}] = names
	return nil
}

// scriptCondition evaluates the scripts' own conditions. [root] holds when
// the tests run as root, which giving files to another user needs; a script
// that needs it starts with "[!root] skip 'why'". When RESERVE_CI is set the
// condition fails the script instead of letting it skip, because CI must
// run it.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "root":
		if os.Getuid() != 0 && os.Getenv("RESERVE_CI") != "" {
			return false, errors.New("this script needs root, and CI (RESERVE_CI) must run it")
		}
		return os.Getuid() == 0, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// poll calls cond until it reports true, failing the script when it returns
// an error or pollTimeout passes.
func poll(ts *testscript.TestScript, what string, cond func(ctx context.Context) (bool, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			ts.Fatalf("gave up after %s waiting for %s (last error: %v)", pollTimeout, what, last)
		case <-tick.C:
		}
	}
}

// socketClient returns a client of the script's daemon over its socket; the
// test process runs as the daemon's user, so it is an admin.
func socketClient(ts *testscript.TestScript) *client.Client {
	return &client.Client{Socket: ts.Getenv("RESERVED_SOCKET")}
}

// cmdWaitReady waits until the daemon answers /healthz on its socket.
//
//	waitready
func cmdWaitReady(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: waitready")
	}
	c := socketClient(ts)
	poll(ts, "reserved to answer /healthz", func(ctx context.Context) (bool, error) {
		err := c.Health(ctx)
		return err == nil, err
	})
}

// cmdExpectExit runs a program and asserts its exact exit code, keeping its
// stdout and stderr for the next stdout and stderr commands. With -within
// the program must also exit within DURATION; if it does not, it is killed
// (SIGKILL, which it cannot ignore) and the script fails.
//
//	expectexit [-within DURATION] CODE PROGRAM [ARGS...]
func cmdExpectExit(ts *testscript.TestScript, neg bool, args []string) {
	var within time.Duration
	if len(args) >= 2 && args[0] == "-within" {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		within, args = d, args[2:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: expectexit [-within DURATION] CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if within > 0 {
		got = execWithin(ts, within, args[1], args[2:])
	} else if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("run %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// reservedPlaces returns the reserved-places counter of a workshop.
func reservedPlaces(ctx context.Context, ts *testscript.TestScript, id string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w, err := socketClient(ts).Workshop(ctx, id)
	return w.Reserved, err
}

// placesArgs parses "WORKSHOP N".
func placesArgs(ts *testscript.TestScript, neg bool, args []string, name string) (string, int) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: %s WORKSHOP N", name)
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	return args[0], n
}

// cmdPlaces asserts how many places of a workshop the daemon has reserved;
// `reserved check` at the end of a script proves that this counter equals
// the places of the stored reservations.
//
//	places WORKSHOP N
func cmdPlaces(ts *testscript.TestScript, neg bool, args []string) {
	id, want := placesArgs(ts, neg, args, "places")
	got, err := reservedPlaces(context.Background(), ts, id)
	ts.Check(err)
	if got != want {
		ts.Fatalf("workshop %s has %d places reserved, want %d", id, got, want)
	}
	ts.Logf("workshop %s: %d places reserved", id, got)
}

// cmdWaitPlaces waits until a workshop has N places reserved.
//
//	waitplaces WORKSHOP N
func cmdWaitPlaces(ts *testscript.TestScript, neg bool, args []string) {
	id, want := placesArgs(ts, neg, args, "waitplaces")
	poll(ts, fmt.Sprintf("%d places reserved in %s", want, id), func(ctx context.Context) (bool, error) {
		got, err := reservedPlaces(ctx, ts, id)
		return err == nil && got == want, err
	})
}

// cmdFault arms an injected fault of a daemon started with
// --enable-fault-injection, for the next answer or the next N.
//
//	fault [-count=N] fail_receipt_write|garble_response|delay_response [DELAY_MS]
func cmdFault(ts *testscript.TestScript, neg bool, args []string) {
	f := api.Fault{Count: 1}
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		ts.Check(err)
		f.Count, args = n, args[1:]
	}
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: fault [-count=N] NAME [DELAY_MS]")
	}
	f.Fault = args[0]
	if len(args) == 2 {
		ms, err := strconv.Atoi(args[1])
		ts.Check(err)
		f.DelayMS = ms
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ts.Check(socketClient(ts).ArmFault(ctx, f))
}

// cmdCapture sets an environment variable to the first submatch of a
// regular expression in the last command's stdout.
//
//	capture NAME REGEXP
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME REGEXP")
	}
	re, err := regexp.Compile(`(?m)` + args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("no submatch of %q in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// cmdFreePort sets an environment variable to a TCP port on 127.0.0.1 that
// was free a moment ago.
//
//	freeport NAME
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ts.Check(ln.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// cmdWaitAttempts waits until the state file ($RESERVECTL_STATE) records at
// least N attempts: reservectl writes each one before it sends, while it
// holds the state file's lock.
//
//	waitattempts N
func cmdWaitAttempts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitattempts N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	path := ts.Getenv("RESERVECTL_STATE")
	poll(ts, fmt.Sprintf("%d attempts in %s", want, path), func(context.Context) (bool, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var rec struct {
			Attempts int `json:"attempts"`
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			return false, err
		}
		return rec.Attempts >= want, nil
	})
}

// cmdWaitExpired waits until the daemon's janitor (reserved serve
// --receipt-retention) has turned the receipt of an operation key of the
// script's actor into a tombstone: GET /api/v1/operations/KEY answers 410
// operation_expired.
//
//	waitexpired KEY
func cmdWaitExpired(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitexpired KEY")
	}
	c := socketClient(ts)
	poll(ts, "the receipt of "+args[0]+" to expire", func(ctx context.Context) (bool, error) {
		_, err := c.Operation(ctx, engine.OperationKey(args[0]))
		return engine.ErrorCode(err) == engine.CodeOperationExpired, err
	})
}

// cmdWaitDeliveries waits until the daemon's delivery view lists at least
// N deliveries in STATE (pending, failed, delivered or skipped): its
// dispatcher has routed the events and judged the attempts.
//
//	waitdeliveries STATE N
func cmdWaitDeliveries(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitdeliveries STATE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	c := socketClient(ts)
	poll(ts, fmt.Sprintf("%d deliveries %s", n, args[0]), func(ctx context.Context) (bool, error) {
		page, err := c.Deliveries(ctx, engine.DeliveryFilter{State: engine.DeliveryState(args[0]), Limit: engine.MaxDeliveryPage})
		return err == nil && len(page.Deliveries) >= n, err
	})
}

// cmdWaitPlan waits until the plan file of a reservectl import records at
// least N rows with an authoritative outcome (settled), or at least N rows
// whose last attempt left them without one (unclear). The import rewrites
// its plan atomically, so every read sees a whole plan.
//
//	waitplan PLAN settled|unclear N
func cmdWaitPlan(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || (args[1] != "settled" && args[1] != "unclear") {
		ts.Fatalf("usage: waitplan PLAN settled|unclear N")
	}
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	poll(ts, fmt.Sprintf("%d %s rows in %s", want, args[1], path), func(context.Context) (bool, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var plan struct {
			Rows []struct {
				Outcome   json.RawMessage `json:"outcome"`
				LastError string          `json:"last_error"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(data, &plan); err != nil {
			return false, err
		}
		n := 0
		for _, r := range plan.Rows {
			if (args[1] == "settled" && r.Outcome != nil) || (args[1] == "unclear" && r.Outcome == nil && r.LastError != "") {
				n++
			}
		}
		return n >= want, nil
	})
}

// execWithin runs a program of the script, killing it and failing the
// script if it has not exited after d, copies its stdout and stderr to the
// command's, and returns its exit code.
func execWithin(ts *testscript.TestScript, d time.Duration, prog string, args []string) int {
	cmd := scriptCommand(ts, prog, args)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ts.Check(cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		ts.Fatalf("%s did not exit within %s (killed)\n%s%s", prog, d, stdout.String(), stderr.String())
	}
	fmt.Fprint(ts.Stdout(), stdout.String())
	fmt.Fprint(ts.Stderr(), stderr.String())
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	ts.Fatalf("run %s: %v", prog, err)
	return -1
}

// scriptCommand returns the command that runs a program of the script's
// PATH in its working directory with the environment Setup made.
func scriptCommand(ts *testscript.TestScript, prog string, args []string) *exec.Cmd {
	path, err := lookPath(ts, prog)
	ts.Check(err)
	var env []string
	for _, k := range ts.Value(envKeys{}).([]string) {
		env = append(env, k+"="+ts.Getenv(k))
	}
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Dir = env, ts.MkAbs(".")
	return cmd
}

// cmdChown gives files to a uid (and the group of the same number).
//
//	chown UID FILE...
func cmdChown(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: chown UID FILE...")
	}
	uid, err := strconv.Atoi(args[0])
	ts.Check(err)
	for _, f := range args[1:] {
		ts.Check(os.Lchown(ts.MkAbs(f), uid, uid))
	}
}

// cmdMkfifo makes named pipes.
//
//	mkfifo FILE...
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mkfifo FILE...")
	}
	for _, f := range args {
		ts.Check(syscall.Mkfifo(ts.MkAbs(f), 0o600))
	}
}

// cmdMkpublicdir makes directories that anyone can create files in, with
// the sticky bit, like /tmp (mode 1777).
//
//	mkpublicdir DIR...
func cmdMkpublicdir(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: mkpublicdir DIR...")
	}
	for _, d := range args {
		ts.Check(os.Mkdir(ts.MkAbs(d), 0o700))
		ts.Check(os.Chmod(ts.MkAbs(d), 0o777|os.ModeSticky))
	}
}

// cmdRace starts N copies of a program at once, "%d" in its arguments
// replaced by the copy's number, waits for all, and prints how many exited
// with each code, one "exit CODE: COUNT" line per code in ascending order.
//
//	race N PROGRAM [ARGS...]
func cmdRace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: race N PROGRAM [ARGS...]")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)

	type result struct {
		code           int
		stdout, stderr strings.Builder
	}
	results := make([]result, n)
	cmds := make([]*exec.Cmd, n)
	for i := range n {
		var cargs []string
		for _, a := range args[2:] {
			cargs = append(cargs, strings.ReplaceAll(a, "%d", strconv.Itoa(i)))
		}
		cmd := scriptCommand(ts, args[1], cargs)
		cmd.Stdout, cmd.Stderr = &results[i].stdout, &results[i].stderr
		cmds[i] = cmd
	}
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		ts.Check(cmd.Start())
		wg.Go(func() {
			err := cmd.Wait()
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				results[i].code = ee.ExitCode()
			default:
				results[i].code = -1
			}
		})
	}
	wg.Wait()

	counts := map[int]int{}
	for i := range results {
		r := &results[i]
		counts[r.code]++
		ts.Logf("[race %d: exit %d]\n%s%s", i, r.code, r.stdout.String(), r.stderr.String())
	}
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(ts.Stdout(), "exit %d: %d\n", c, counts[c])
	}
}

// lookPath finds a program in the script's PATH.
func lookPath(ts *testscript.TestScript, name string) (string, error) {
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not in the script's PATH", name)
}
