package boltstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/reserve/reserve/internal/engine"
)

// The token index lists the API tokens by id (engine.TokenID of the hash):
// the key of an entry is the id followed by the hash (the id has a fixed
// length), the value is empty, so one seek finds a token by id and a
// cursor visits the tokens in order of id, without reading the login codes
// and sessions stored beside them in the tokens bucket. PutToken and
// DeleteToken keep it in step; Open builds it for a file that an earlier
// schema version wrote (upgradeTokenIndex).

// tokenEntry is the index key of the API token stored under hash.
func tokenEntry(hash string) []byte { return []byte(engine.TokenID(hash) + hash) }

// isAPIToken reports whether the token record raw is an API token: records
// written before credential kinds existed have no kind and are API tokens.
func isAPIToken(raw []byte) (bool, error) {
	var r engine.TokenRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return false, err
	}
	return withKind(r).Kind == engine.TokenAPI, nil
}

// upgradeTokenIndex is the upgrade step to schema version 7: it builds the
// index of API tokens by id from the tokens bucket, replacing whatever the
// index held, in the transaction that marks the file version 7. It changes
// no record. Ids are random, so pages keep bbolt's default fill.
func upgradeTokenIndex(btx *bolt.Tx, path string) error {
	return buildIndex(btx, path, bucketTokens, bucketTokensByID, bolt.DefaultFillPercent, func(k, raw []byte) ([]byte, error) {
		if api, err := isAPIToken(raw); !api || err != nil {
			return nil, err
		}
		return tokenEntry(string(k)), nil
	})
}

// apiTokenHashes returns the hashes of the API tokens with id (every one
// when id is ""), in order of id. A file that lacks the index (one an
// earlier schema version wrote, opened read-only) is scanned instead.
func (t *tx) apiTokenHashes(id string) ([]string, error) {
	var hashes []string
	index := t.read(bucketTokensByID)
	if index == nil {
		tokens := t.read(bucketTokens)
		if tokens == nil {
			return nil, nil
		}
		var entries []string
		err := tokens.ForEach(func(k, raw []byte) error {
			api, err := isAPIToken(raw)
			if err != nil {
				return fmt.Errorf("decode %s/%q: %w", bucketTokens, k, err)
			}
			if e := string(tokenEntry(string(k))); api && (id == "" || e[:len(id)] == id) {
				entries = append(entries, e)
			}
			return nil
		})
		slices.Sort(entries)
		for _, e := range entries {
			hashes = append(hashes, e[tokenIDLen:])
		}
		return hashes, err
	}
	c := index.Cursor()
	for k, _ := c.Seek([]byte(id)); k != nil && bytes.HasPrefix(k, []byte(id)); k, _ = c.Next() {
		if len(k) > tokenIDLen {
			hashes = append(hashes, string(k[tokenIDLen:]))
		}
	}
	return hashes, nil
}

// tokenIDLen is the length of an engine.TokenID.
var tokenIDLen = len(engine.TokenID(""))

func (t *tx) APIToken(id string) (engine.TokenRecord, bool, error) {
	if !engine.IsTokenID(id) {
		return engine.TokenRecord{}, false, nil
	}
	hashes, err := t.apiTokenHashes(id)
	if err != nil || len(hashes) == 0 {
		return engine.TokenRecord{}, false, err
	}
	return t.Token(hashes[0])
}

func (t *tx) ForEachAPIToken(fn func(engine.TokenRecord) error) error {
	hashes, err := t.apiTokenHashes("")
	if err != nil {
		return err
	}
	for _, hash := range hashes {
		r, ok, err := t.Token(hash)
		if err != nil {
			return err
		}
		if !ok || r.Kind != engine.TokenAPI {
			continue // Deleted by fn, or an entry Check reports.
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// verifyTokenIndex reports every difference between the API tokens and
// their index.
func verifyTokenIndex(t *tx) ([]engine.Finding, error) {
	index, tokens := t.read(bucketTokensByID), t.read(bucketTokens)
	if index == nil || tokens == nil {
		return nil, nil // A read-only open of an older file: no index to check.
	}
	var findings []engine.Finding
	err := index.ForEach(func(e, _ []byte) error {
		if len(e) <= tokenIDLen || string(tokenEntry(string(e[tokenIDLen:]))) != string(e) {
			findings = append(findings, engine.Finding{Kind: engine.FindingTokenIndex, Detail: fmt.Sprintf("%s entry %q is not an id and a hash", bucketTokensByID, e)})
			return nil
		}
		raw := tokens.Get(e[tokenIDLen:])
		if raw == nil {
			findings = append(findings, engine.Finding{Kind: engine.FindingTokenIndex, Detail: fmt.Sprintf("%s lists token %s, which does not exist", bucketTokensByID, e[:tokenIDLen])})
			return nil
		}
		if api, err := isAPIToken(raw); err != nil || !api {
			findings = append(findings, engine.Finding{Kind: engine.FindingTokenIndex, Detail: fmt.Sprintf("%s lists token %s, which is no API token", bucketTokensByID, e[:tokenIDLen])})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = tokens.ForEach(func(k, raw []byte) error {
		api, err := isAPIToken(raw)
		if err != nil {
			return fmt.Errorf("decode %s/%q: %w", bucketTokens, k, err)
		}
		if api && index.Get(tokenEntry(string(k))) == nil {
			findings = append(findings, engine.Finding{Kind: engine.FindingTokenIndex, Detail: fmt.Sprintf("API token %s is missing from %s", engine.TokenID(string(k)), bucketTokensByID)})
		}
		return nil
	})
	return findings, err
}
