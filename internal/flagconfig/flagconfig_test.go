package flagconfig_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/reserve/reserve/internal/flagconfig"
)

// settings are the flags of the tests, one of each kind.
type settings struct {
	config   string
	listen   string
	db       string
	gc       int
	noDemo   bool
	shutdown time.Duration
	hosts    []string
}

// newFlags returns a flag set of the tests' flags, with cobra's help flag,
// and where they are stored; defaultConfig is the default of --config.
func newFlags(defaultConfig string) (*pflag.FlagSet, *settings) {
	s := &settings{}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.StringVar(&s.config, "config", defaultConfig, "the configuration file")
	fs.StringVar(&s.listen, "listen", "127.0.0.1:8080", "TCP address")
	fs.StringVar(&s.db, "db", "/var/lib/x.db", "the database")
	fs.IntVar(&s.gc, "gc-percent", 400, "garbage collector target")
	fs.BoolVar(&s.noDemo, "no-demo", false, "no demo workshop")
	fs.DurationVar(&s.shutdown, "shutdown-timeout", 10*time.Second, "shutdown timeout")
	fs.StringSliceVar(&s.hosts, "allowed-host", nil, "extra Host names")
	fs.Bool("help", false, "help")
	return fs, s
}

// run parses args, then applies the environment env and, unless it is "",
// the configuration file with content file, named by --config.
func run(t *testing.T, args []string, env map[string]string, file string) (*settings, flagconfig.Result, error) {
	t.Helper()
	path := ""
	if file != "" {
		path = filepath.Join(t.TempDir(), "reserved.conf")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	fs, s := newFlags("")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	res, err := sources(env).Apply(fs)
	if err == nil && res.File != path {
		t.Errorf("File = %q, want %q", res.File, path)
	}
	return s, res, err
}

func sources(env map[string]string) flagconfig.Sources {
	return flagconfig.Sources{
		Prefix:     "RESERVED_",
		LookupEnv:  func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		ConfigFlag: "config",
		Ignore:     []string{"help"},
		Fresh:      func() *pflag.FlagSet { fs, _ := newFlags(""); return fs },
	}
}

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{
		"max-tcp-connections": "RESERVED_MAX_TCP_CONNECTIONS",
		"db":                  "RESERVED_DB",
		"oidc-client-id":      "RESERVED_OIDC_CLIENT_ID",
	} {
		if got := flagconfig.EnvName("RESERVED_", flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

// TestPrecedence: the command line wins over the environment, the
// environment over the file, the file over the default, for every kind
// of flag.
func TestPrecedence(t *testing.T) {
	const file = "gc-percent = 1\nno-demo = true\nshutdown-timeout = 1s\nallowed-host = file-a\nallowed-host = file-b\n"
	env := map[string]string{"RESERVED_GC_PERCENT": "2", "RESERVED_SHUTDOWN_TIMEOUT": "2s", "RESERVED_ALLOWED_HOST": "env-a,env-b"}
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		file   string
		gc     int
		noDemo bool
		wait   time.Duration
		hosts  []string
	}{
		{"Defaults", nil, nil, "", 400, false, 10 * time.Second, nil},
		{"File", nil, nil, file, 1, true, time.Second, []string{"file-a", "file-b"}},
		{"EnvironmentOverFile", nil, env, file, 2, true, 2 * time.Second, []string{"env-a", "env-b"}},
		{"Environment", nil, env, "", 2, false, 2 * time.Second, []string{"env-a", "env-b"}},
		{"FlagsOverBoth", []string{"--gc-percent", "3", "--no-demo=false", "--shutdown-timeout", "3s", "--allowed-host", "flag"}, env, file, 3, false, 3 * time.Second, []string{"flag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := run(t, tc.args, tc.env, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if s.gc != tc.gc || s.noDemo != tc.noDemo || s.shutdown != tc.wait || !slices.Equal(s.hosts, tc.hosts) {
				t.Errorf("gc-percent %d, no-demo %v, shutdown-timeout %v, allowed-host %q; want %d, %v, %v, %q", s.gc, s.noDemo, s.shutdown, s.hosts, tc.gc, tc.noDemo, tc.wait, tc.hosts)
			}
		})
	}
}

// TestResultNamesSources: the result says which flags came from where, and
// a flag set from either counts as given (Changed), as on the command line.
func TestResultNamesSources(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(path, []byte("db = /file.db\ngc-percent = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, _ := newFlags("")
	if err := fs.Parse([]string{"--config", path, "--db", "/flag.db"}); err != nil {
		t.Fatal(err)
	}
	res, err := sources(map[string]string{"RESERVED_NO_DEMO": "1"}).Apply(fs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.FromFile, []string{"gc-percent"}) || !slices.Equal(res.FromEnv, []string{"no-demo"}) {
		t.Errorf("from the file %q, from the environment %q", res.FromFile, res.FromEnv)
	}
	for _, name := range []string{"gc-percent", "no-demo"} {
		if !fs.Changed(name) {
			t.Errorf("--%s does not count as given", name)
		}
	}
}

// TestEmptyVariableIsAValue: a variable set to "" empties its flag, as an
// empty value on the command line does, also over the file.
func TestEmptyVariableIsAValue(t *testing.T) {
	s, _, err := run(t, nil, map[string]string{"RESERVED_LISTEN": ""}, "listen = :9090\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.listen != "" {
		t.Errorf("listen = %q, want it empty", s.listen)
	}
}

// TestFileSyntax: comments, blank lines, white space, quotes, and '=' and
// '#' inside values.
func TestFileSyntax(t *testing.T) {
	const file = `# The daemon's settings.

   listen=  [::1]:8080   
db = "/srv/a \"b\".db"
	# indented comment
allowed-host = 'a#b'
allowed-host = c = d
`
	s, _, err := run(t, nil, nil, file)
	if err != nil {
		t.Fatal(err)
	}
	if s.listen != "[::1]:8080" || s.db != `/srv/a "b".db` || !slices.Equal(s.hosts, []string{"a#b", "c = d"}) {
		t.Errorf("listen %q, db %q, allowed-host %q", s.listen, s.db, s.hosts)
	}
	s, _, err = run(t, nil, nil, "listen = ''\n")
	if err != nil || s.listen != "" {
		t.Errorf("listen = '' gives %q, %v", s.listen, err)
	}
}

// TestErrors: every refusal names the file and line or the variable, and
// says what is wrong; a bad value is refused even where the command line
// overrides it.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string // After "FILE:" for errors of the file.
	}{
		{"UnknownSetting", nil, nil, "db = x\nlistn = :80\n", `2: unknown setting "listn"; did you mean "listen"? (the settings are the flags' names without their dashes)`},
		{"UnderscoreName", nil, nil, "no_demo = true\n", `1: unknown setting "no_demo"; did you mean "no-demo"? (the settings are the flags' names without their dashes)`},
		{"Dashes", nil, nil, "--no-demo = true\n", `1: unknown setting "--no-demo"; did you mean "no-demo"? (the settings are the flags' names without their dashes)`},
		{"FarOff", nil, nil, "colour = blue\n", `1: unknown setting "colour" (the settings are the flags' names without their dashes)`},
		{"Help", nil, nil, "help = true\n", `1: unknown setting "help" (the settings are the flags' names without their dashes)`},
		{"Config", nil, nil, "config = /etc/other.conf\n", `1: "config" names the configuration file, which cannot name another`},
		{"NoEquals", nil, nil, "\nno-demo\n", `2: the line has no '=': want a setting as name = value, e.g. listen = 127.0.0.1:8080`},
		{"SpaceInName", nil, nil, "no demo = 1\n", `1: "no demo" is no setting's name: want a setting as name = value, e.g. listen = 127.0.0.1:8080`},
		{"Twice", nil, nil, "db = a\n\ndb = b\n", `3: "db" is set again (first on line 1); only a repeatable flag may be set on several lines`},
		{"BadInt", nil, nil, "gc-percent = lots\n", `1: invalid argument "lots" for "--gc-percent" flag: strconv.ParseInt: parsing "lots": invalid syntax`},
		{"BadIntOverridden", []string{"--gc-percent", "5"}, map[string]string{"RESERVED_GC_PERCENT": "6"}, "gc-percent = lots\n", `1: invalid argument "lots" for "--gc-percent" flag: strconv.ParseInt: parsing "lots": invalid syntax`},
		{"BadDuration", nil, nil, "shutdown-timeout = 10\n", `1: invalid argument "10" for "--shutdown-timeout" flag: time: missing unit in duration "10"`},
		{"BadQuotes", nil, nil, "db = \"/a\n", `1: the value of db: it begins with '"' but is no complete double-quoted string (with escapes as in Go)`},
		{"BadSingleQuotes", nil, nil, "db = 'a'b'\n", `1: the value of db: it begins with "'" but is no complete single-quoted string (with no ' inside)`},
		{"SecretNotQuoted", nil, nil, "dsn postgres://u:secret@h/d\n", `1: the line has no '=': want a setting as name = value, e.g. listen = 127.0.0.1:8080`},
		{"BadVariable", nil, map[string]string{"RESERVED_NO_DEMO": "yes"}, "", `environment variable RESERVED_NO_DEMO: invalid argument "yes" for "--no-demo" flag: strconv.ParseBool: parsing "yes": invalid syntax`},
		{"BadVariableOverridden", []string{"--no-demo"}, map[string]string{"RESERVED_NO_DEMO": ""}, "", `environment variable RESERVED_NO_DEMO: invalid argument "" for "--no-demo" flag: strconv.ParseBool: parsing "": invalid syntax`},
		{"MissingConfig", []string{"--config", "/nonexistent/reserved.conf"}, nil, "", "configuration file (--config): open /nonexistent/reserved.conf: no such file or directory"},
		{"MissingConfigByVariable", nil, map[string]string{"RESERVED_CONFIG": "/nonexistent/reserved.conf"}, "", "configuration file (RESERVED_CONFIG): open /nonexistent/reserved.conf: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res, err := run(t, tc.args, tc.env, tc.file)
			want := tc.want
			if tc.file != "" {
				want = res.File + ":" + want
			}
			if err == nil || err.Error() != want {
				t.Errorf("error\n%v\nwant\n%s", err, want)
			}
		})
	}
}

// TestDefaultConfigOnlyWhereItExists: the default file is read where it
// exists and skipped where it does not; an empty --config or variable
// reads none.
func TestDefaultConfigOnlyWhereItExists(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "reserved.conf")
	apply := func(args []string, env map[string]string) (*settings, flagconfig.Result) {
		t.Helper()
		fs, s := newFlags(def)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		res, err := sources(env).Apply(fs)
		if err != nil {
			t.Fatal(err)
		}
		return s, res
	}
	if s, res := apply(nil, nil); res.File != "" || s.db != "/var/lib/x.db" {
		t.Errorf("without the default file: read %q, db %q", res.File, s.db)
	}
	if err := os.WriteFile(def, []byte("db = /srv/r.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, res := apply(nil, nil); res.File != def || s.db != "/srv/r.db" {
		t.Errorf("with the default file: read %q, db %q", res.File, s.db)
	}
	if s, res := apply([]string{"--config", ""}, nil); res.File != "" || s.db != "/var/lib/x.db" {
		t.Errorf("--config '': read %q, db %q", res.File, s.db)
	}
	if s, res := apply(nil, map[string]string{"RESERVED_CONFIG": ""}); res.File != "" || s.db != "/var/lib/x.db" {
		t.Errorf("RESERVED_CONFIG='': read %q, db %q", res.File, s.db)
	}
}

// TestUnreadableDefaultConfig: a default file that exists but cannot be
// read is an error, not silently passed over.
func TestUnreadableDefaultConfig(t *testing.T) {
	def := filepath.Join(t.TempDir(), "reserved.conf")
	if err := os.Mkdir(def, 0o700); err != nil { // Opens, but cannot be read.
		t.Fatal(err)
	}
	fs, _ := newFlags(def)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	_, err := sources(nil).Apply(fs)
	if want := "read " + def + ": is a directory"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestAnnotate: help names every flag's variable once.
func TestAnnotate(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("db", "", "the database (env RESERVED_DB, or the default)")
	fs.Int("gc-percent", 400, "garbage collector target (a non-empty GOGC wins)")
	flagconfig.Annotate(fs, "RESERVED_")
	if got := fs.Lookup("db").Usage; got != "the database (env RESERVED_DB, or the default)" {
		t.Errorf("db: %q", got)
	}
	if got := fs.Lookup("gc-percent").Usage; got != "garbage collector target (a non-empty GOGC wins) (env RESERVED_GC_PERCENT)" {
		t.Errorf("gc-percent: %q", got)
	}
	if !strings.Contains(fs.FlagUsages(), "(env RESERVED_GC_PERCENT)") {
		t.Errorf("usage:\n%s", fs.FlagUsages())
	}
}
