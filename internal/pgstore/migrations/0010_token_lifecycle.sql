-- 0010_token_lifecycle gives API tokens what their lifecycle needs: an id
-- to list and revoke a token by, and when it was last used. The id is
-- derived from the hash as engine.TokenID derives it (the first 32 hex
-- digits of the SHA-256 of 'reserve-token-id:' and the hash; a hash is hex
-- digits, so its cast to bytea is its bytes), in a generated column: every
-- token has one, also one that a daemon of an earlier version, still
-- running while this one migrates, creates (it neither reads nor writes
-- the new columns, and its tokens keep working). Adding the stored column
-- rewrites the tokens table once; it holds credentials only.
ALTER TABLE tokens
    ADD COLUMN id TEXT COLLATE "C" GENERATED ALWAYS AS (left(encode(sha256(('reserve-token-id:' || hash)::bytea), 'hex'), 32)) STORED,
    ADD COLUMN last_used_at TIMESTAMPTZ NULL;

-- API tokens by id, for revocation and for the list in order of id.
CREATE UNIQUE INDEX tokens_api_by_id ON tokens (id) WHERE kind = 'api';
