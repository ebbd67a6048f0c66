package chaos

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.etcd.io/gofail/code"
)

// Binaries are the programs a campaign runs.
type Binaries struct {
	Reserved, Reservectl string
}

// Build builds reserved and reservectl of the module in moduleDir into
// dir, as failpoint builds: with the "failpoint" tag, which arms reserve's
// own failpoints and the clock file, and against a copy of bbolt whose
// gofail comments are turned into failpoints. The copy replaces bbolt
// through a module file of its own (go build -modfile), so neither the
// module's go.mod nor the module cache is touched.
func Build(moduleDir, dir string) (Binaries, error) {
	modfile, err := bboltFailpoints(moduleDir, dir)
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Reserved: filepath.Join(dir, "reserved"), Reservectl: filepath.Join(dir, "reservectl")}
	for out, pkg := range map[string]string{b.Reserved: "./cmd/reserved", b.Reservectl: "./cmd/reservectl"} {
		cmd := exec.Command("go", "build", "-tags", "failpoint", "-modfile", modfile, "-o", out, pkg)
		cmd.Dir = moduleDir
		if msg, err := cmd.CombinedOutput(); err != nil {
			return Binaries{}, fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

// bboltFailpoints copies bbolt's package into dir/bbolt with every gofail
// comment turned into a failpoint (and the file that declares them), and
// returns a module file, a copy of the module's go.mod that replaces
// bbolt by that copy.
func bboltFailpoints(moduleDir, dir string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.etcd.io/bbolt")
	cmd.Dir = moduleDir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find bbolt's source: go list: %w", err)
	}
	src := strings.TrimSpace(string(out))
	dst := filepath.Join(dir, "bbolt")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(src, "*"))
	if err != nil {
		return "", err
	}
	points := 0
	for _, f := range files {
		name := filepath.Base(f)
		if fi, err := os.Stat(f); err != nil || fi.IsDir() || strings.HasSuffix(name, "_test.go") {
			continue // bbolt's package is its top directory's files.
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if strings.HasSuffix(name, ".go") && bytes.Contains(data, []byte("// gofail:")) {
			var rewritten bytes.Buffer
			fps, err := code.ToFailpoints(&rewritten, bytes.NewReader(data))
			if err != nil {
				return "", fmt.Errorf("gofail %s: %w", f, err)
			}
			pf, err := parser.ParseFile(token.NewFileSet(), f, data, parser.PackageClauseOnly)
			if err != nil {
				return "", fmt.Errorf("parse %s: %w", f, err)
			}
			var binding bytes.Buffer
			if err := code.NewBinding(pf.Name.Name, fps).Write(&binding); err != nil {
				return "", fmt.Errorf("gofail binding of %s: %w", f, err)
			}
			if err := os.WriteFile(filepath.Join(dst, strings.TrimSuffix(name, ".go")+".fail.go"), binding.Bytes(), 0o644); err != nil {
				return "", err
			}
			data, points = rewritten.Bytes(), points+len(fps)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			return "", err
		}
	}
	if points == 0 {
		return "", fmt.Errorf("bbolt in %s has no gofail comments", src)
	}
	for _, sub := range []string{"internal", "errors"} {
		if err := os.CopyFS(filepath.Join(dst, sub), os.DirFS(filepath.Join(src, sub))); err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("copy bbolt's %s: %w", sub, err)
		}
	}
	gomod, err := os.ReadFile(filepath.Join(moduleDir, "go.mod"))
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile(filepath.Join(moduleDir, "go.sum"))
	if err != nil {
		return "", err
	}
	modfile := filepath.Join(dir, "failpoint.mod")
	gomod = append(gomod, "\nreplace go.etcd.io/bbolt => "+dst+"\n"...)
	if err := os.WriteFile(modfile, gomod, 0o644); err != nil {
		return "", err
	}
	return modfile, os.WriteFile(filepath.Join(dir, "failpoint.sum"), gosum, 0o644)
}
