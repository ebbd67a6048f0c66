-- 0014_deliveries adds what webhooks and mails need: the hold events, the
-- routing of every event to its deliveries, webhook endpoints, deliveries,
-- the delivery an operator's correction was for, and a person's verified
-- address. Every new column has a constant default or is nullable, so
-- adding it rewrites no table, and the new indexes are built on new,
-- empty tables.

-- hold_id names the hold of a hold event; a hold event without a
-- reservation has reservation_id ''. owner, workshop and quantity are the
-- members an event is routed by (its mail goes to the owner): NULL in the
-- events stored before, and in those a daemon of an earlier version
-- writes while this one migrates, which get their webhooks but no mail.
--
-- A hold event is not for the simple channels (a directory of event
-- files, one URL): it is stored with delivered_at '-infinity', so it is
-- never pending for them and stays out of events_pending, which their
-- scan reads as before, also on a daemon of an earlier version.
--
-- routed is false until the event's deliveries are made. The events
-- stored before this migration are routed (the simple channels deliver
-- them as before; they get no webhook or mail); every event written after
-- it, also by a daemon of an earlier version, is not.
ALTER TABLE events
    ADD COLUMN hold_id  TEXT COLLATE "C" NULL,
    ADD COLUMN owner    TEXT COLLATE "C" NULL,
    ADD COLUMN workshop TEXT COLLATE "C" NULL,
    ADD COLUMN quantity BIGINT NULL,
    ADD COLUMN routed   BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE events ALTER COLUMN routed SET DEFAULT false;

-- The receipt of an operator's correction of a delivery, and the
-- tombstone that replaces it, name the delivery.
ALTER TABLE receipts ADD COLUMN delivery_id TEXT COLLATE "C" NULL;
ALTER TABLE tombstones ADD COLUMN delivery_id TEXT COLLATE "C" NULL;

-- email is the address an identity provider said is the person's, "" for
-- none.
ALTER TABLE profiles ADD COLUMN email TEXT NOT NULL DEFAULT '';

-- webhook_endpoints keeps the receivers of webhooks with their signing
-- secrets; an empty event_types gets every type. A URL has one endpoint:
-- of two daemons adding it at once, the second fails on the unique key,
-- runs again and finds the first one's.
CREATE TABLE webhook_endpoints (
    id          TEXT COLLATE "C" PRIMARY KEY,
    url         TEXT NOT NULL UNIQUE,
    event_types TEXT[] NOT NULL,
    secret      TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    created_by  TEXT COLLATE "C" NOT NULL
);

-- deliveries keeps each event on its way to one webhook endpoint or one
-- mailbox, keyed by the event's id and the destination's. It has no
-- foreign keys, like the other tables: engine.Check reports a delivery of
-- an unknown event.
CREATE TABLE deliveries (
    id              TEXT COLLATE "C" PRIMARY KEY,
    event_id        TEXT COLLATE "C" NOT NULL,
    event_type      TEXT NOT NULL,
    channel         TEXT COLLATE "C" NOT NULL,
    endpoint        TEXT COLLATE "C" NULL,
    recipient       TEXT NULL,
    state           TEXT COLLATE "C" NOT NULL,
    attempts        INTEGER NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    since           TIMESTAMPTZ NOT NULL,
    next_attempt_at TIMESTAMPTZ NULL,
    last_attempt_at TIMESTAMPTZ NULL,
    last_status     INTEGER NOT NULL,
    last_error      TEXT NULL,
    done_at         TIMESTAMPTZ NULL
);

-- deliveries_by_state lists the deliveries of one state page by page;
-- deliveries_due finds the pending ones that are due, oldest due first,
-- without reading the others.
CREATE INDEX deliveries_by_state ON deliveries (state, id);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE state = 'pending';
