// Package flagconfig lets every flag of a command take its value from an
// environment variable or a configuration file as well as from the
// command line, by one rule for all flags: the command line wins over the
// environment, the environment over the file, and the file over the
// flag's default. Nothing is written per flag: the variables and the
// settings the file may hold are derived from the flag set, so a flag
// added later has both.
//
// A flag's variable is its name in upper case, '-' turned into '_', after
// a prefix: with the prefix RESERVED_, --max-tcp-connections is
// RESERVED_MAX_TCP_CONNECTIONS. Its value is read as the flag's value on
// the command line would be; a variable set to the empty string gives the
// flag the empty value (an empty --listen, say), and an unset one leaves
// it alone. Variables with the prefix that name no flag are not looked at:
// the environment is shared with other programs.
//
// The configuration file holds one setting a line, "name = value", name
// being the flag's name without its dashes. Blank lines and lines whose
// first character other than white space is '#' are skipped; '#' later
// in a line is part of the value. White space around the name and the
// value is dropped; a value in double quotes is read as a Go string
// literal (with its escapes), one in single quotes as the text between
// them. A repeatable flag (a slice) may be set on several lines, each
// adding a value; any other flag only once. An unknown name, a line that
// is no setting and a value the flag refuses are errors that name the
// file and the line, even for a flag that the command line or the
// environment overrides, so that a broken file is found the first time.
//
// It imports nothing of reserve.
package flagconfig

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// EnvName returns the environment variable of the flag named flag: prefix
// and the name in upper case with '-' turned into '_'.
func EnvName(prefix, flag string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Annotate appends " (env NAME)" to the usage of every flag in fs, so
// that help names each flag's variable. A usage that names its variable
// already, because it has more to say about it, is left as it is.
func Annotate(fs *pflag.FlagSet, prefix string) {
	fs.VisitAll(func(f *pflag.Flag) {
		if name := EnvName(prefix, f.Name); !strings.Contains(f.Usage, name) {
			f.Usage += " (env " + name + ")"
		}
	})
}

// Sources says where Apply looks for the values of the flags the command
// line did not set.
type Sources struct {
	// Prefix comes before every variable's name, e.g. "RESERVED_".
	Prefix string
	// LookupEnv looks up an environment variable: os.LookupEnv, or a
	// map in tests.
	LookupEnv func(string) (string, bool)
	// ConfigFlag names the flag that names the configuration file. Its
	// default is read only where it exists; a file named on the command
	// line or by the flag's variable must exist. An empty name reads no
	// file. With ConfigFlag "" no file is ever read.
	ConfigFlag string
	// Ignore names the flags that are no settings, such as cobra's help
	// and version: they have no variable, and the file cannot set them.
	Ignore []string
	// Fresh returns a new flag set with the same flags and defaults. Apply
	// checks every value of the file and the environment on it, also the
	// ones that the command line overrides; without it, only the values
	// used are checked.
	Fresh func() *pflag.FlagSet
}

// Result says where the values came from.
type Result struct {
	// File is the configuration file that was read, "" for none.
	File string
	// FromFile and FromEnv name the flags that took their value from the
	// file and from the environment.
	FromFile, FromEnv []string
}

// Setting is one line of a configuration file.
type Setting struct {
	Line        int
	Name, Value string
}

// Apply gives every flag of fs that the command line did not set its
// value from the environment or, failing that, from the configuration
// file. fs must have been parsed.
func (s Sources) Apply(fs *pflag.FlagSet) (Result, error) {
	var res Result
	given := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	settings, err := s.readConfig(fs, given, &res)
	if err != nil {
		return res, err
	}
	check := fs
	if s.Fresh != nil {
		check = s.Fresh()
	}
	if err := s.checkSettings(fs, check, res.File, settings); err != nil {
		return res, err
	}
	env := map[string]string{}
	var envErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if envErr != nil || s.ignored(f.Name) || f.Name == s.ConfigFlag {
			return
		}
		name := EnvName(s.Prefix, f.Name)
		v, ok := s.LookupEnv(name)
		if !ok {
			return
		}
		env[f.Name] = v
		if s.Fresh != nil {
			envErr = envError(name, check.Set(f.Name, v))
		}
	})
	if envErr != nil {
		return res, envErr
	}

	// The values are known to be good: set the ones that count.
	for _, name := range sortedKeys(env) {
		if given[name] {
			continue
		}
		if err := envError(EnvName(s.Prefix, name), fs.Set(name, env[name])); err != nil {
			return res, err
		}
		res.FromEnv = append(res.FromEnv, name)
	}
	for _, st := range settings {
		if _, ok := env[st.Name]; ok || given[st.Name] {
			continue
		}
		if err := fs.Set(st.Name, st.Value); err != nil {
			return res, fmt.Errorf("%s:%d: %w", res.File, st.Line, err)
		}
		if !slices.Contains(res.FromFile, st.Name) {
			res.FromFile = append(res.FromFile, st.Name)
		}
	}
	return res, nil
}

// envError says which variable held a value that err refuses.
func envError(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("environment variable %s: %w", name, err)
}

func (s Sources) ignored(name string) bool { return slices.Contains(s.Ignore, name) }

// readConfig finds the configuration file (the config flag, else its
// variable, else its default where that file exists) and reads it.
func (s Sources) readConfig(fs *pflag.FlagSet, given map[string]bool, res *Result) ([]Setting, error) {
	if s.ConfigFlag == "" {
		return nil, nil
	}
	flag := fs.Lookup(s.ConfigFlag)
	if flag == nil {
		return nil, fmt.Errorf("flagconfig: no flag --%s names the configuration file", s.ConfigFlag)
	}
	path, namedBy := flag.Value.String(), "--"+s.ConfigFlag
	if !given[s.ConfigFlag] {
		name := EnvName(s.Prefix, s.ConfigFlag)
		v, ok := s.LookupEnv(name)
		if ok {
			if err := envError(name, fs.Set(s.ConfigFlag, v)); err != nil {
				return nil, err
			}
			path, namedBy = v, name
		} else {
			namedBy = ""
		}
	}
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && namedBy == "" {
		return nil, nil // The default file is read only where it exists.
	}
	if err != nil {
		if namedBy != "" {
			return nil, fmt.Errorf("configuration file (%s): %w", namedBy, err)
		}
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	defer f.Close()
	res.File = path
	return Parse(path, f)
}

// checkSettings refuses a setting that names no flag (or one that is no
// setting), one set twice that cannot be, and, on check, a value its flag
// refuses.
func (s Sources) checkSettings(fs, check *pflag.FlagSet, path string, settings []Setting) error {
	first := map[string]int{}
	for _, st := range settings {
		at := fmt.Sprintf("%s:%d", path, st.Line)
		f := fs.Lookup(st.Name)
		switch {
		case st.Name == s.ConfigFlag:
			return fmt.Errorf("%s: %q names the configuration file, which cannot name another", at, st.Name)
		case f == nil || s.ignored(st.Name):
			msg := fmt.Sprintf("%s: unknown setting %q", at, st.Name)
			if near := s.nearest(fs, st.Name); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return errors.New(msg + " (the settings are the flags' names without their dashes)")
		}
		if line, ok := first[st.Name]; ok {
			if _, repeatable := f.Value.(pflag.SliceValue); !repeatable {
				return fmt.Errorf("%s: %q is set again (first on line %d); only a repeatable flag may be set on several lines", at, st.Name, line)
			}
		} else {
			first[st.Name] = st.Line
		}
		if s.Fresh != nil {
			if err := check.Set(st.Name, st.Value); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	}
	return nil
}

// nearest returns the setting that name probably misspells, or "".
func (s Sources) nearest(fs *pflag.FlagSet, name string) string {
	plain := strings.ToLower(strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-"))
	best, bestDist := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if s.ignored(f.Name) || f.Name == s.ConfigFlag {
			return
		}
		if d := distance(plain, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// maxLine bounds a line of a configuration file.
const maxLine = 64 << 10

// Parse reads the settings of a configuration file; name names it in
// errors.
func Parse(name string, r io.Reader) ([]Setting, error) {
	var settings []Setting
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		// A line is not quoted in errors: it may hold a password.
		switch {
		case !ok:
			return nil, fmt.Errorf("%s:%d: the line has no '=': want a setting as name = value, e.g. listen = 127.0.0.1:8080", name, n)
		case key == "" || strings.ContainsAny(key, " \t"):
			return nil, fmt.Errorf("%s:%d: %q is no setting's name: want a setting as name = value, e.g. listen = 127.0.0.1:8080", name, n, key)
		}
		value, err := unquote(value)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: the value of %s: %w", name, n, key, err)
		}
		settings = append(settings, Setting{Line: n, Name: key, Value: value})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d bytes", name, maxLine)
		}
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			return nil, err // It names the file already.
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return settings, nil
}

// unquote reads a value in double quotes as a Go string literal and one in
// single quotes as the text between them; any other value is as it is.
// Its errors do not quote the value, which may be a password.
func unquote(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, `"`):
		s, err := strconv.Unquote(v)
		if err != nil {
			return "", errors.New("it begins with '\"' but is no complete double-quoted string (with escapes as in Go)")
		}
		return s, nil
	case strings.HasPrefix(v, "'"):
		if len(v) < 2 || !strings.HasSuffix(v, "'") || strings.Contains(v[1:len(v)-1], "'") {
			return "", errors.New("it begins with \"'\" but is no complete single-quoted string (with no ' inside)")
		}
		return v[1 : len(v)-1], nil
	}
	return v, nil
}

// sortedKeys returns the keys of m in order, so that the first bad one
// found is always the same.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
