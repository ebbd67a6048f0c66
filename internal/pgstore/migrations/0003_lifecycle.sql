-- 0003_lifecycle adds the lifecycle of reservations: cancellation
-- columns, the tombstones that replace expired receipts, and the outbox of
-- confirmation events.

-- A cancelled reservation keeps its row; the three columns name the
-- cancellation (all NULL while it is active).
ALTER TABLE reservations
    ADD COLUMN cancelled_at     TIMESTAMPTZ NULL,
    ADD COLUMN cancelled_by     TEXT COLLATE "C" NULL,
    ADD COLUMN cancel_operation TEXT COLLATE "C" NULL;

-- tombstones replace receipts older than the retention period: enough to
-- refuse a late retry of the key, not to replay its answer.
CREATE TABLE tombstones (
    actor               TEXT COLLATE "C" NOT NULL,
    operation_key       TEXT COLLATE "C" NOT NULL,
    fingerprint_version INTEGER NOT NULL,
    fingerprint         TEXT NOT NULL,
    http_status         INTEGER NOT NULL,
    status              TEXT NOT NULL,
    reservation_id      TEXT COLLATE "C",
    workshop            TEXT COLLATE "C" NOT NULL,
    quantity            BIGINT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    purged_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (actor, operation_key)
);

-- events is the outbox: one confirmation per reservation and cancellation,
-- written in its transaction and marked delivered later.
CREATE TABLE events (
    id             TEXT COLLATE "C" PRIMARY KEY,
    type           TEXT NOT NULL,
    reservation_id TEXT COLLATE "C" NOT NULL,
    actor          TEXT COLLATE "C" NOT NULL,
    operation_key  TEXT COLLATE "C" NOT NULL,
    payload        BYTEA NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    delivered_at   TIMESTAMPTZ NULL
);

CREATE INDEX events_pending ON events (id) WHERE delivered_at IS NULL;
