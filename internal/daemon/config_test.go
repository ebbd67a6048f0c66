package daemon_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/daemon"
	"github.com/reserve/reserve/internal/flagconfig"
)

// serveFlagSets returns the flags of `reserved serve` and of the bare
// `reserved`, which runs serve, by name.
func serveFlagSets(t *testing.T) map[string]*cobra.Command {
	t.Helper()
	root := daemon.Command(&bytes.Buffer{}, &bytes.Buffer{})
	serve, _, err := root.Find([]string{"serve"})
	if err != nil || serve == root {
		t.Fatalf("no serve command: %v", err)
	}
	return map[string]*cobra.Command{"reserved": root, "reserved serve": serve}
}

// TestEveryServeFlagHasAVariable: every flag of serve, also one added
// later, has its environment variable, named in its help, and that
// variable sets it; the variables the daemon had before the rule keep
// their names.
func TestEveryServeFlagHasAVariable(t *testing.T) {
	var help bytes.Buffer
	if code := daemon.Run(t.Context(), []string{"serve", "--help"}, &help, &help); code != 0 {
		t.Fatalf("reserved serve --help: exit %d\n%s", code, &help)
	}
	for name, cmd := range serveFlagSets(t) {
		flags := cmd.Flags()
		if err := flags.Parse(nil); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		count := 0
		flags.VisitAll(func(f *pflag.Flag) {
			count++
			v := flagconfig.EnvName(daemon.EnvPrefix, f.Name)
			if !strings.Contains(f.Usage, v) {
				t.Errorf("%s --%s: the help does not name %s: %q", name, f.Name, v, f.Usage)
			}
			if name == "reserved serve" && !strings.Contains(help.String(), v) {
				t.Errorf("reserved serve --help does not name %s", v)
			}
			env[v] = f.DefValue
		})
		env["RESERVED_CONFIG"] = "" // Reads no file.
		if count < 30 {
			t.Fatalf("%s has only %d flags", name, count)
		}
		if _, err := daemon.ConfigSources(func(k string) (string, bool) { v, ok := env[k]; return v, ok }).Apply(flags); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		flags.VisitAll(func(f *pflag.Flag) {
			if !f.Changed {
				t.Errorf("%s --%s: %s does not set it", name, f.Name, flagconfig.EnvName(daemon.EnvPrefix, f.Name))
			}
		})
		for flag, v := range map[string]string{"store": "RESERVED_STORE", "dsn": "RESERVED_DSN", "db": "RESERVED_DB", "socket": "RESERVED_SOCKET", "listen": "RESERVED_LISTEN", "config": "RESERVED_CONFIG"} {
			if flags.Lookup(flag) == nil || flagconfig.EnvName(daemon.EnvPrefix, flag) != v {
				t.Errorf("%s: --%s is not set by %s", name, flag, v)
			}
		}
	}
}
