package boltstore

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// dumpRecords reads the records of a dump (lines of bucket, hex key and
// hex value) by bucket.
func dumpRecords(t *testing.T, path string) map[string]map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records := map[string]map[string][]byte{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, " ")
		if len(fields) != 3 {
			t.Fatalf("dump line %q", line)
		}
		k, err1 := hex.DecodeString(fields[1])
		v, err2 := hex.DecodeString(fields[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("dump line %q: %v %v", line, err1, err2)
		}
		if records[fields[0]] == nil {
			records[fields[0]] = map[string][]byte{}
		}
		records[fields[0]][string(k)] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return records
}

// TestEarlierRecordsEncodeAsBefore: every receipt, reservation, event and
// workshop as the releases of schema versions 7 and 9 wrote them encodes
// again to the same bytes, so that rewriting one (an event marked
// delivered, say) changes nothing that version wrote.
func TestEarlierRecordsEncodeAsBefore(t *testing.T) {
	for _, dump := range []string{"testdata/schema7.dump", "testdata/schema9.dump"} {
		records := dumpRecords(t, dump)
		codecs := map[string]func(k, raw []byte) ([]byte, error){
			"receipts": func(k, raw []byte) ([]byte, error) {
				r, err := decodeReceipt(k, raw)
				if err != nil {
					return nil, err
				}
				return encodeReceipt(r)
			},
			"reservations": func(k, raw []byte) ([]byte, error) {
				r, err := decodeReservation(k, raw)
				return encodeReservation(r), err
			},
			"events": func(k, raw []byte) ([]byte, error) {
				e, err := decodeEvent(k, raw)
				if err != nil {
					return nil, err
				}
				return encodeEvent(e)
			},
			"workshops": func(k, raw []byte) ([]byte, error) {
				w, err := decodeWorkshop(k, raw)
				return encodeWorkshop(w), err
			},
		}
		for bucket, again := range codecs {
			if len(records[bucket]) == 0 {
				t.Fatalf("%s holds no %s", dump, bucket)
			}
			for k, raw := range records[bucket] {
				if got, err := again([]byte(k), raw); err != nil || !bytes.Equal(got, raw) {
					t.Errorf("%s: %s %q encodes again as %x, %v; want %x", dump, bucket, k, got, err, raw)
				}
			}
		}
	}
}
