-- 0001_init creates the tables of reserve's PostgreSQL store. Identifiers
-- use the "C" collation, so that key order is byte order, as in bbolt.

CREATE TABLE workshops (
    id           TEXT COLLATE "C" PRIMARY KEY,
    title        TEXT NOT NULL,
    capacity     BIGINT NOT NULL,
    reserved     BIGINT NOT NULL,
    max_quantity BIGINT NOT NULL,
    version      BIGINT NOT NULL
);

-- reservations has no UNIQUE (actor, operation_key) and no foreign key to
-- workshops: the store keeps whatever its transaction writes, and engine.Check
-- is what reports a second reservation for one intent or a reservation of an
-- unknown workshop (the conformance suite writes both on purpose). The
-- guard against two effects of one intent is the primary key of receipts,
-- written in the same transaction as the reservation.
CREATE TABLE reservations (
    id            TEXT COLLATE "C" PRIMARY KEY,
    actor         TEXT COLLATE "C" NOT NULL,
    operation_key TEXT COLLATE "C" NOT NULL,
    workshop      TEXT COLLATE "C" NOT NULL,
    quantity      BIGINT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

CREATE INDEX reservations_workshop ON reservations (workshop);

-- receipts holds the authoritative answer of each (actor, operation_key):
-- the status and the response body byte for byte.
CREATE TABLE receipts (
    actor               TEXT COLLATE "C" NOT NULL,
    operation_key       TEXT COLLATE "C" NOT NULL,
    fingerprint_version INTEGER NOT NULL,
    fingerprint         TEXT NOT NULL,
    workshop            TEXT COLLATE "C" NOT NULL,
    quantity            BIGINT NOT NULL,
    http_status         INTEGER NOT NULL,
    body                BYTEA NOT NULL,
    reservation_id      TEXT COLLATE "C",
    created_at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (actor, operation_key)
);

-- tokens holds only the SHA-256 of each API token.
CREATE TABLE tokens (
    hash       TEXT COLLATE "C" PRIMARY KEY,
    actor      TEXT NOT NULL,
    admin      BOOLEAN NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
