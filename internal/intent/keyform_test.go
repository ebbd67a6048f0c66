package intent_test

import (
	"encoding/json"
	"os"
	"testing"
)

// lastUUIDv4Schema is the last schema version of the state file whose
// readers accept only UUIDv4 operation keys: reservectl before UUIDv7 keys
// reads a record of that version with a UUIDv7 key as corrupt ("inspect
// it, then move it away to start over"), and a user who does so sends the
// intent again under a new key, though its first send may have reserved.
// A record of a later version it refuses as newer, "use the reservectl
// that wrote it".
const lastUUIDv4Schema = 4

// TestRecordOfATimeOrderedKeyIsNewer: a record that holds a UUIDv7 key
// carries a schema version that a reservectl reading only UUIDv4 keys
// refuses as newer, not as corrupt.
func TestRecordOfATimeOrderedKeyIsNewer(t *testing.T) {
	path := statePath(t)
	j := mustOpen(t, path)
	in := mustNewReserve(t)
	if !in.Key.IsTimeOrdered() {
		t.Fatalf("a new intent's key %s is not a UUIDv7", in.Key)
	}
	if err := j.Save(in); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Schema <= lastUUIDv4Schema {
		t.Errorf("a record with the UUIDv7 key %s has schema version %d, which reservectl of version %d reads as corrupt", in.Key, rec.Schema, lastUUIDv4Schema)
	}
}
