-- 0016_waitlists adds waiting lists: the entries of people waiting for a
-- workshop's places, each workshop's count of them and the time its
-- offers last, the entry an offer (a hold) is made for, and the entry that
-- an answer names. Every new column has a constant default or is
-- nullable, so adding it rewrites no table, and the new indexes are built
-- on a new, empty table.

-- waiting counts the workshop's entries that wait for their turn, kept in
-- the transaction of every change to them; offer_ttl_seconds is how long
-- its offers last (0: the default).
ALTER TABLE workshops
    ADD COLUMN waiting           BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN offer_ttl_seconds BIGINT NOT NULL DEFAULT 0;

-- entry_id names the entry a hold is the offer of; NULL for every other
-- hold.
ALTER TABLE holds ADD COLUMN entry_id TEXT COLLATE "C" NULL;

-- The receipt of a request that joined a waiting list names its entry and
-- the entry's position when it joined; the receipt of a leaving names the
-- entry it left. The tombstone that replaces such a receipt keeps both,
-- as it keeps the other members of an answer.
ALTER TABLE receipts
    ADD COLUMN entry_id TEXT COLLATE "C" NULL,
    ADD COLUMN position BIGINT NULL;
ALTER TABLE tombstones
    ADD COLUMN entry_id TEXT COLLATE "C" NULL,
    ADD COLUMN position BIGINT NULL;

-- wait_entries keeps every entry of every waiting list, keyed by its id,
-- which starts with the time it joined: a workshop's queue is its waiting
-- entries in order of id. An entry's position is not stored; it is
-- counted from the queue when it is shown. Like the other tables it has no
-- foreign keys: engine.Check reports an entry of an unknown workshop.
CREATE TABLE wait_entries (
    id               TEXT COLLATE "C" PRIMARY KEY,
    actor            TEXT COLLATE "C" NOT NULL,
    operation_key    TEXT COLLATE "C" NOT NULL,
    workshop         TEXT COLLATE "C" NOT NULL,
    quantity         BIGINT NOT NULL,
    state            TEXT COLLATE "C" NOT NULL,
    hold_id          TEXT COLLATE "C" NULL,
    offer_expires_at TIMESTAMPTZ NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    settled_at       TIMESTAMPTZ NULL
);

-- wait_entries_waiting is each workshop's queue, without the entries that
-- left it; wait_entries_by_workshop lists a workshop's entries in every
-- state for its organizers, and wait_entries_by_actor a person's own,
-- newest first.
CREATE INDEX wait_entries_waiting ON wait_entries (workshop, id) WHERE state = 'waiting';
CREATE INDEX wait_entries_by_workshop ON wait_entries (workshop, id);
CREATE INDEX wait_entries_by_actor ON wait_entries (actor, id);

-- A daemon of an earlier version, still running while this one migrates,
-- knows nothing of waiting lists. Deciding on a workshop that people wait
-- for, it would give the places a cancellation, a release or an expiry
-- frees to whoever asks next instead of offering them to the people
-- waiting, and let walk-ins past the queue; settling an offer (a hold it
-- sees as any other), it would leave the offer's entry as it was. Unlike
-- holds (migration 0005), which changed how every workshop's places are
-- counted, a waiting list concerns only the workshops people wait for,
-- so the earlier daemon is refused those writes only, and keeps deciding
-- for every other workshop as before.
--
-- To tell its writes from this version's, every write of a workshop or a
-- hold by a daemon of this version or later states the schema version it
-- knows in writer_schema, which is never stored: a trigger empties it on
-- every write, so a daemon that does not name the column (an earlier
-- one, whose upsert leaves it as stored) writes it as NULL. The trigger
-- that refuses an earlier daemon's write is named so that it runs before
-- the one that empties the column (triggers of one event run in order of
-- name). Refusals use SQLSTATE 55P03 (lock_not_available), which the
-- earlier daemon answers as the store being unavailable (503, retry with
-- the same key) without retrying itself: nothing is stored, and the
-- client's retry reaches a daemon of this version once the earlier one is
-- stopped.
ALTER TABLE workshops ADD COLUMN writer_schema INTEGER NULL;
ALTER TABLE holds ADD COLUMN writer_schema INTEGER NULL;

CREATE FUNCTION reserve_forget_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.writer_schema := NULL;
    RETURN NEW;
END
$$;

-- TG_ARGV[0] says what the row is, with %s for its id.
CREATE FUNCTION reserve_refuse_earlier_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = '55P03',
        MESSAGE = format(TG_ARGV[0], OLD.id) || ': only a reserved of schema version 16 or later may change it',
        HINT = 'Upgrade every reserved that uses this database.';
END
$$;

-- A workshop with people waiting is changed (or deleted) only by a daemon
-- that serves its waiting list.
CREATE TRIGGER workshops_refuse_earlier_writer BEFORE UPDATE ON workshops FOR EACH ROW
    WHEN (OLD.waiting > 0 AND NEW.writer_schema IS NULL)
    EXECUTE FUNCTION reserve_refuse_earlier_writer('workshop %s has people on its waiting list');
CREATE TRIGGER workshops_refuse_earlier_delete BEFORE DELETE ON workshops FOR EACH ROW
    WHEN (OLD.waiting > 0)
    EXECUTE FUNCTION reserve_refuse_earlier_writer('workshop %s has people on its waiting list');
CREATE TRIGGER workshops_writer BEFORE INSERT OR UPDATE ON workshops FOR EACH ROW
    WHEN (NEW.writer_schema IS NOT NULL)
    EXECUTE FUNCTION reserve_forget_writer();

-- An offer is settled only by a daemon that settles its entry with it.
CREATE TRIGGER holds_refuse_earlier_writer BEFORE UPDATE ON holds FOR EACH ROW
    WHEN (OLD.entry_id IS NOT NULL AND NEW.writer_schema IS NULL)
    EXECUTE FUNCTION reserve_refuse_earlier_writer('hold %s is an offer from a waiting list');
CREATE TRIGGER holds_writer BEFORE INSERT OR UPDATE ON holds FOR EACH ROW
    WHEN (NEW.writer_schema IS NOT NULL)
    EXECUTE FUNCTION reserve_forget_writer();

-- The earlier daemon's receipt expiry turns a receipt into a tombstone of
-- the members it knows, which would lose the entry of a "waiting" answer
-- and of the answers of leaving (fingerprint versions 8 and 9). Such a
-- tombstone is refused; NOT VALID skips the scan of the existing rows,
-- none of which has those versions.
ALTER TABLE tombstones ADD CONSTRAINT tombstones_name_their_entry
    CHECK (entry_id IS NOT NULL OR NOT (fingerprint_version = 9 OR (fingerprint_version = 8 AND status = 'waiting'))) NOT VALID;
