-- 0005_holds adds holds: places kept for a while, counted against capacity
-- until they are confirmed into a reservation, released, or past their
-- deadline. Every change is online-safe: the new columns have constant
-- defaults (no table rewrite) and the index is built on a new, empty table.

-- holding counts the places of the workshop's open holds (stored as held),
-- in the same transaction as every hold, confirmation, release and cleanup.
ALTER TABLE workshops ADD COLUMN holding BIGINT NOT NULL DEFAULT 0;

-- A daemon of an earlier version, still running while this one migrates,
-- would decide reservations by capacity minus reserved alone and overbook
-- the places held by this version's daemons. Renaming the column it reads
-- makes its every workshop read fail instead (an undecided answer, which
-- its client retries with the same key, on a daemon of this version).
ALTER TABLE workshops RENAME COLUMN reserved TO reserved_places;

-- A hold request's receipt names the hold it made, its deadline and the
-- time to live it asked for; a confirmation's or release's names the hold.
ALTER TABLE receipts
    ADD COLUMN hold_id          TEXT COLLATE "C" NULL,
    ADD COLUMN hold_expires_at  TIMESTAMPTZ NULL,
    ADD COLUMN hold_ttl_seconds INTEGER NOT NULL DEFAULT 0;

ALTER TABLE tombstones
    ADD COLUMN hold_id         TEXT COLLATE "C" NULL,
    ADD COLUMN hold_expires_at TIMESTAMPTZ NULL;

-- holds keeps every hold; state is held, confirmed, released or expired
-- (the last once a cleanup gave its places back).
CREATE TABLE holds (
    id               TEXT COLLATE "C" PRIMARY KEY,
    actor            TEXT COLLATE "C" NOT NULL,
    operation_key    TEXT COLLATE "C" NOT NULL,
    workshop         TEXT COLLATE "C" NOT NULL,
    quantity         BIGINT NOT NULL,
    state            TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    expires_at       TIMESTAMPTZ NOT NULL,
    reservation_id   TEXT COLLATE "C" NULL,
    settled_at       TIMESTAMPTZ NULL,
    settle_operation TEXT COLLATE "C" NULL
);

-- holds_open finds the open holds of a workshop past their deadline
-- without reading the settled ones.
CREATE INDEX holds_open ON holds (workshop, expires_at, id) WHERE state = 'held';
