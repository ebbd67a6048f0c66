package intent_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reserve/reserve/internal/intent"
)

// TestStateFilesOfEarlierVersionsRoundTrip reads state files exactly as
// earlier versions of reservectl wrote them (schema version 1: open,
// settled and rejected intents, and the intents of holds) and saves them
// again: the bytes must not change but for the schema version, which the
// save raises to the current one.
func TestStateFilesOfEarlierVersionsRoundTrip(t *testing.T) {
	for _, name := range []string{"state-open.json", "state-reserved.json", "state-cancel-rejected.json", "state-hold-held.json", "state-confirm-open.json"} {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			path := statePath(t)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o600); err != nil {
				t.Fatal(err)
			}
			var updated time.Time
			j := mustOpen(t, path, intent.WithClock(func() time.Time { return updated }))
			in, err := j.Load()
			if err != nil {
				t.Fatal(err)
			}
			updated = in.UpdatedAt
			if err := j.Save(in); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want = bytes.Replace(want, []byte(`"schema": 1,`), []byte(fmt.Sprintf(`"schema": %d,`, intent.SchemaVersion)), 1)
			if !bytes.Equal(got, want) {
				t.Errorf("saved again:\n%s\nwant it as it was written, at schema version %d:\n%s", got, intent.SchemaVersion, want)
			}
		})
	}
}
