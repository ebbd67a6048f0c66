package sdnotify

import (
	"os"
	"path/filepath"
	"testing"
)

// TestListenerRefusesAFile: an inherited descriptor that is not a socket
// is refused.
func TestListenerRefusesAFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listener(f); err == nil || err.Error() != "it is not a socket" {
		t.Errorf("Listener of a file = %v", err)
	}
}
