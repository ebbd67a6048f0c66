-- Secret credentials of several kinds share the tokens table: API tokens
-- (which never expire), one-time login codes and browser sessions. Rows from
-- version 1 are API tokens.
ALTER TABLE tokens
    ADD COLUMN kind       TEXT NOT NULL DEFAULT 'api',
    ADD COLUMN expires_at TIMESTAMPTZ NULL;
