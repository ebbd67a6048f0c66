package intent_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
			_, got := resaved(t, want)
			want = bytes.Replace(want, []byte(`"schema": 1,`), []byte(fmt.Sprintf(`"schema": %d,`, intent.SchemaVersion)), 1)
			if !bytes.Equal(got, want) {
				t.Errorf("saved again:\n%s\nwant it as it was written, at schema version %d:\n%s", got, intent.SchemaVersion, want)
			}
		})
	}
}

// TestExpiredAnswerOfVersion2ReadsAsAnswerExpired reads a state file as
// reservectl wrote it at schema version 2 for an open intent whose retry got
// the refusal operation_expired: it recorded that as "rejected", which says
// that nothing was done, while reserved had decided the intent and only its
// answer was gone. Read now, the outcome is StatusAnswerExpired, with its
// HTTP status and body byte for byte, and saved again it is written as such
// at the current schema version, everything else unchanged.
func TestExpiredAnswerOfVersion2ReadsAsAnswerExpired(t *testing.T) {
	written, err := os.ReadFile(filepath.Join("testdata", "state-reserve-expired-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	in, got := resaved(t, written)
	if in.Outcome == nil || in.Outcome.Status != intent.StatusAnswerExpired || in.Outcome.HTTPStatus != 410 {
		t.Fatalf("outcome %+v, want status %q with HTTP status 410", in.Outcome, intent.StatusAnswerExpired)
	}
	if !bytes.Contains(in.Outcome.Body, []byte(`"code":"operation_expired"`)) {
		t.Errorf("body %s lost its problem", in.Outcome.Body)
	}
	if in.Effect() != 0 {
		t.Errorf("Effect() = %d, want 0: what an expired answer did is not known", in.Effect())
	}
	want := bytes.Replace(written, []byte(`"schema": 2,`), []byte(fmt.Sprintf(`"schema": %d,`, intent.SchemaVersion)), 1)
	want = bytes.Replace(want, []byte(`"status": "rejected",`), []byte(`"status": "operation_expired",`), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("saved again:\n%s\nwant:\n%s", got, want)
	}
}

// TestAnswerExpiredInAVersion2RecordIsCorrupt refuses a record that claims
// schema version 2 but holds the status that only version 3 knows: no
// reservectl wrote it.
func TestAnswerExpiredInAVersion2RecordIsCorrupt(t *testing.T) {
	written, err := os.ReadFile(filepath.Join("testdata", "state-reserve-expired-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	written = bytes.Replace(written, []byte(`"status": "rejected",`), []byte(`"status": "operation_expired",`), 1)
	path := writeState(t, written)
	_, err = mustOpen(t, path).Load()
	if !errors.Is(err, intent.ErrCorrupt) || !strings.Contains(err.Error(), `status "operation_expired" is not part of schema version 2`) {
		t.Fatalf("Load() = %v, want it corrupt: the status is not part of schema version 2", err)
	}
}

// resaved writes data as a new state file, loads its intent and saves it
// again at the same update time, and returns the intent loaded and the
// file as it was saved.
func resaved(t *testing.T, data []byte) (*intent.Intent, []byte) {
	t.Helper()
	path := writeState(t, data)
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
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return in, saved
}
