package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// EnvDSN names the PostgreSQL server of the postgres runs.
const EnvDSN = "RESERVE_PG_DSN"

// Exit statuses of reservechaos.
const (
	exitOK        = 0
	exitViolation = 1
	exitUsage     = 2
)

const usage = `usage: reservechaos [flags]

reservechaos runs seeded runs of real reserved and reservectl processes under
faults and checks every run's history and stores. Each run prints one line
(seed, commit, operations, ambiguous operations, crashes by cause, faults,
check time, violations); a summary with the failpoint coverage ends the
campaign. It exits 1 when any run found a violation, 2 on a usage error.

Run i of a campaign has seed first-seed+i; its store is the seed's entry of
--stores, so "--seed S" with the same --stores replays the run of seed S:
the same clients' operations, keys and fault schedule (the interleaving of
processes is the machine's).

Stores: bolt (one daemon), postgres (one daemon) and postgres3 (three
daemons on one database); postgres runs need RESERVE_PG_DSN, and without it
they are left out (said on stderr). About one postgres run in four, by its
seed, builds a PostgreSQL cluster of its own (a primary with a synchronous
standby) and restarts and fails over its primary while the clients run;
that and the full disk need root (and the cluster the PostgreSQL server
binaries), and without them those faults are skipped (said in the
summary). With RESERVE_CI=1 any of these fails the campaign instead.

Flags:
`

// DefaultStores are the stores the seeds cycle through unless --stores
// says otherwise.
const DefaultStores = "bolt,postgres,postgres3"

// storeOf is the store of the run of seed s, whose entry of kinds (bolt,
// postgres or postgres3) is the seed's: the store, how many daemons serve
// it, and whether it is a PostgreSQL cluster of the run's own.
func storeOf(kinds []string, s uint64) (store string, daemons int, cluster bool) {
	switch k := kinds[s%uint64(len(kinds))]; k {
	case "postgres":
		return k, 1, OwnsCluster(s)
	case "postgres3":
		return "postgres", 3, OwnsCluster(s)
	default:
		return k, 1, false
	}
}

// Main is reservechaos.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reservechaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var (
		seeds     = fs.Int("seeds", 10, "how many runs")
		firstSeed = fs.Uint64("first-seed", 1, "the seed of the first run")
		seed      = fs.Uint64("seed", 0, "run only this seed (replays a failing run)")
		sizeName  = fs.String("size", "ci", "size of each run: ci or long")
		stores    = fs.String("stores", DefaultStores, "the stores the seeds cycle through, comma-separated")
		reserved  = fs.String("reserved", "", "a failpoint build of reserved to run instead of building one")
		ctl       = fs.String("reservectl", "", "a failpoint build of reservectl to run instead of building one")
		module    = fs.String("module", ".", "the module to build the binaries of")
		commit    = fs.String("commit", "", "the commit the line names (default: git rev-parse --short HEAD of --module)")
		duration  = fs.Duration("duration", 0, "start no run after this long (0: no limit), e.g. 35m")
		tmp       = fs.String("tmp", "", "directory for the runs' files (default: the system's)")
		parallel  = fs.Int("parallel", 1, "how many runs at once (each uses well under one CPU)")
		dump      = fs.String("dump", "", "write the history of every run with violations into this directory")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reservechaos: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	var size Size
	switch *sizeName {
	case "ci":
		size = CISize
	case "long":
		size = LongSize
	default:
		fmt.Fprintf(stderr, "reservechaos: --size %q: use ci or long\n", *sizeName)
		return exitUsage
	}
	if (*reserved == "") != (*ctl == "") {
		fmt.Fprintln(stderr, "reservechaos: give both --reserved and --reservectl, or neither")
		return exitUsage
	}
	if *parallel < 1 {
		fmt.Fprintf(stderr, "reservechaos: --parallel must be at least 1, not %d\n", *parallel)
		return exitUsage
	}
	if *seeds < 1 {
		fmt.Fprintf(stderr, "reservechaos: --seeds must be at least 1, not %d\n", *seeds)
		return exitUsage
	}
	dsn := os.Getenv(EnvDSN)
	// Under CI a fault or store that cannot run fails the campaign
	// instead of being left out.
	ci := os.Getenv("RESERVE_CI") == "1"
	var kinds []string
	for _, k := range strings.Split(*stores, ",") {
		switch k = strings.TrimSpace(k); k {
		case "bolt":
		case "postgres", "postgres3":
			if dsn == "" && ci {
				fmt.Fprintf(stderr, "reservechaos: %s needs %s, which is not set (RESERVE_CI is set, so this fails instead of leaving it out)\n", k, EnvDSN)
				return exitUsage
			}
			if dsn == "" {
				fmt.Fprintf(stderr, "reservechaos: %s left out: %s is not set\n", k, EnvDSN)
				continue
			}
		default:
			fmt.Fprintf(stderr, "reservechaos: --stores: %q is not bolt, postgres or postgres3\n", k)
			return exitUsage
		}
		kinds = append(kinds, k)
	}
	if len(kinds) == 0 {
		fmt.Fprintln(stderr, "reservechaos: no store left to run")
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin := Binaries{Reserved: *reserved, Reservectl: *ctl}
	if bin.Reserved == "" {
		dir, err := os.MkdirTemp(*tmp, "reservechaos-bin-")
		if err != nil {
			fmt.Fprintf(stderr, "reservechaos: %v\n", err)
			return exitViolation
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(stderr, "reservechaos: building failpoint binaries")
		if bin, err = Build(*module, dir); err != nil {
			fmt.Fprintf(stderr, "reservechaos: build: %v\n", err)
			return exitViolation
		}
	}
	if *commit == "" {
		*commit = "unknown"
		if out, err := exec.Command("git", "-C", *module, "rev-parse", "--short", "HEAD").Output(); err == nil {
			*commit = strings.TrimSpace(string(out))
		}
	}
	first, n := *firstSeed, *seeds
	if *seed != 0 {
		first, n = *seed, 1
	}
	for _, k := range kinds {
		if k == "bolt" || dsn == "" {
			continue
		}
		campaign, note, err := CampaignDSN(ctx, dsn)
		if err != nil {
			fmt.Fprintf(stderr, "reservechaos: %v\n", err)
			return exitViolation
		}
		if note != "" {
			fmt.Fprintf(stderr, "reservechaos: %s\n", note)
		}
		dsn = campaign
		break
	}
	var cfgs []Config
	for i := range n {
		s := first + uint64(i)
		c := Config{Seed: s, DSN: dsn, Bin: bin, Commit: *commit, Size: size, TempDir: *tmp, DumpDir: *dump}
		c.Store, c.Daemons, c.Cluster = storeOf(kinds, s)
		cfgs = append(cfgs, c)
	}
	var until time.Time
	if *duration > 0 {
		until = time.Now().Add(*duration)
	}
	sum := RunCampaign(ctx, cfgs, stdout, until, *parallel)
	withBolt := false
	for _, k := range kinds {
		withBolt = withBolt || k == "bolt"
	}
	sum.Write(stdout, AllPoints(withBolt))
	if ci && len(sum.Skipped) > 0 {
		fmt.Fprintln(stderr, "reservechaos: faults were skipped (see the summary), and RESERVE_CI is set")
		return exitViolation
	}
	if sum.Violations > 0 {
		return exitViolation
	}
	return exitOK
}
