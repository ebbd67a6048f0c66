package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestTokenFileMode: a token file that its group or others may read or
// write is refused, one only its owner may use is read, and a pipe (a
// shell's process substitution) is read whatever its mode.
func TestTokenFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SKIPPING: Windows has no Unix permissions to check")
	}
	const token = "rsv_N6N7P_smUPt1VAaw_YQ1t0UPTtluRtHktlcX6U35wUs"
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o600, 0o400, 0o700, 0o640, 0o604, 0o620, 0o602, 0o660, 0o644, 0o666} {
		path := filepath.Join(dir, fmt.Sprintf("%04o.token", mode))
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		got, err := readTokenFile(path)
		if mode&0o077 == 0 {
			if err != nil || got != token {
				t.Errorf("mode %04o: %q, %v; want the token", mode, got, err)
			}
			continue
		}
		want := fmt.Sprintf("%s has mode %04o, which lets others than its owner read or change it: a bearer token must be private; run chmod 600 %s", path, mode, path)
		if err == nil || err.Error() != want {
			t.Errorf("mode %04o: %q, %v; want the error %s", mode, got, err, want)
		}
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		fmt.Fprintln(w, token)
		w.Close()
	}()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if got, err := readTokenFile(path); err != nil || got != token {
		t.Errorf("pipe %s: %q, %v; want the token", path, got, err)
	}
}
