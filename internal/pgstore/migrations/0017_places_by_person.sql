-- 0017_places_by_person counts the places of each actor in each workshop,
-- for its limit per person, so that a decision reads one row instead of
-- the actor's whole history in the workshop: reserved counts the places
-- of the actor's active reservations (cancelled_at NULL), waiting those of
-- the actor's entries waiting on the workshop's list (state 'waiting').
-- The held places are not counted here: a hold's deadline passes without
-- a write, so they are summed from the actor's open holds at the time of
-- the decision (migration 0018 indexes them).
--
-- Triggers on reservations and wait_entries keep the counts in the
-- transaction of every write, whoever writes: a daemon of an earlier
-- version, still running while this one migrates, keeps them right too.
-- A row whose counts are both 0 is deleted, so the table holds the people
-- who have places now, not everyone who ever had some. Places to take
-- away that the table does not count (a count that would go below 0, or
-- no row) mean it no longer matches the rows: the write fails (SQLSTATE
-- 23514) rather than store a wrong count, and reserved check reports the
-- difference as places_mismatch.
--
-- The table is filled from the existing rows in this migration's
-- transaction. First of all it takes the SHARE ROW EXCLUSIVE lock of
-- both tables (which CREATE TRIGGER takes anyway): the transactions
-- writing them are waited for, and later writes wait until this
-- transaction commits, so that every write is counted exactly once, by
-- the fill or by the triggers. Reads are not blocked. The fill is one
-- pass over reservations and wait_entries (docs/postgresql.md gives its
-- time).
LOCK TABLE reservations, wait_entries IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE places_by_person (
    workshop TEXT COLLATE "C" NOT NULL,
    actor    TEXT COLLATE "C" NOT NULL,
    reserved BIGINT NOT NULL CHECK (reserved >= 0),
    waiting  BIGINT NOT NULL CHECK (waiting >= 0),
    PRIMARY KEY (workshop, actor)
);

-- reserve_add_places changes the counts of actor in workshop by reserved
-- and waiting places (each may be negative). Places are added with an
-- upsert and taken away with an update: a CHECK is tested on the row an
-- upsert proposes before the conflict is found, so an upsert of a
-- negative change would always fail.
CREATE FUNCTION reserve_add_places(workshop_id TEXT, actor_name TEXT, reserved_delta BIGINT, waiting_delta BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    now_reserved BIGINT;
    now_waiting  BIGINT;
BEGIN
    IF reserved_delta = 0 AND waiting_delta = 0 THEN
        RETURN;
    END IF;
    IF reserved_delta >= 0 AND waiting_delta >= 0 THEN
        INSERT INTO places_by_person AS p (workshop, actor, reserved, waiting)
            VALUES (workshop_id, actor_name, reserved_delta, waiting_delta)
            ON CONFLICT (workshop, actor) DO UPDATE
            SET reserved = p.reserved + EXCLUDED.reserved, waiting = p.waiting + EXCLUDED.waiting
            RETURNING p.reserved, p.waiting INTO now_reserved, now_waiting;
    ELSE
        UPDATE places_by_person
            SET reserved = reserved + reserved_delta, waiting = waiting + waiting_delta
            WHERE workshop = workshop_id AND actor = actor_name
            RETURNING reserved, waiting INTO now_reserved, now_waiting;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = '23514',
                MESSAGE = format('places_by_person has no row of workshop %s and actor %s to take %s reserved and %s waiting places from: the counts no longer match the rows',
                    workshop_id, actor_name, -reserved_delta, -waiting_delta),
                HINT = 'reserved check reports the differences.';
        END IF;
    END IF;
    IF now_reserved = 0 AND now_waiting = 0 THEN
        DELETE FROM places_by_person WHERE workshop = workshop_id AND actor = actor_name;
    END IF;
END
$$;

-- reserve_move_places moves the places of a row that a write changed:
-- old_places (NULL for none) away from old_workshop and old_actor, and
-- new_places to new_workshop and new_actor, in one change when both are
-- the same; waiting says which count they are.
CREATE FUNCTION reserve_move_places(waiting BOOLEAN, old_workshop TEXT, old_actor TEXT, old_places BIGINT,
    new_workshop TEXT, new_actor TEXT, new_places BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    taken BIGINT := -coalesce(old_places, 0);
    added BIGINT := coalesce(new_places, 0);
BEGIN
    IF old_workshop = new_workshop AND old_actor = new_actor THEN
        added := added + taken;
        taken := 0;
    END IF;
    IF waiting THEN
        PERFORM reserve_add_places(old_workshop, old_actor, 0, taken);
        PERFORM reserve_add_places(new_workshop, new_actor, 0, added);
    ELSE
        PERFORM reserve_add_places(old_workshop, old_actor, taken, 0);
        PERFORM reserve_add_places(new_workshop, new_actor, added, 0);
    END IF;
END
$$;

-- reserve_count_reserved and reserve_count_waiting are the triggers of
-- reservations and wait_entries: a reservation's places count while it
-- is active, an entry's while it waits. OLD is NULL for an insert and
-- NEW for a delete, and so are their places.
CREATE FUNCTION reserve_count_reserved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM reserve_move_places(false,
        OLD.workshop, OLD.actor, CASE WHEN OLD.cancelled_at IS NULL THEN OLD.quantity END,
        NEW.workshop, NEW.actor, CASE WHEN NEW.cancelled_at IS NULL THEN NEW.quantity END);
    RETURN NULL;
END
$$;

CREATE FUNCTION reserve_count_waiting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM reserve_move_places(true,
        OLD.workshop, OLD.actor, CASE WHEN OLD.state = 'waiting' THEN OLD.quantity END,
        NEW.workshop, NEW.actor, CASE WHEN NEW.state = 'waiting' THEN NEW.quantity END);
    RETURN NULL;
END
$$;

-- Only the writes that can change a count run the function: every
-- insert and delete of a row that counts, and the updates of the columns
-- it depends on.
CREATE TRIGGER reservations_count_places AFTER INSERT ON reservations FOR EACH ROW
    WHEN (NEW.cancelled_at IS NULL)
    EXECUTE FUNCTION reserve_count_reserved();
CREATE TRIGGER reservations_uncount_places AFTER DELETE ON reservations FOR EACH ROW
    WHEN (OLD.cancelled_at IS NULL)
    EXECUTE FUNCTION reserve_count_reserved();
CREATE TRIGGER reservations_recount_places AFTER UPDATE ON reservations FOR EACH ROW
    WHEN ((OLD.cancelled_at IS NULL) IS DISTINCT FROM (NEW.cancelled_at IS NULL)
        OR OLD.quantity IS DISTINCT FROM NEW.quantity
        OR OLD.workshop IS DISTINCT FROM NEW.workshop
        OR OLD.actor IS DISTINCT FROM NEW.actor)
    EXECUTE FUNCTION reserve_count_reserved();

CREATE TRIGGER wait_entries_count_places AFTER INSERT ON wait_entries FOR EACH ROW
    WHEN (NEW.state = 'waiting')
    EXECUTE FUNCTION reserve_count_waiting();
CREATE TRIGGER wait_entries_uncount_places AFTER DELETE ON wait_entries FOR EACH ROW
    WHEN (OLD.state = 'waiting')
    EXECUTE FUNCTION reserve_count_waiting();
CREATE TRIGGER wait_entries_recount_places AFTER UPDATE ON wait_entries FOR EACH ROW
    WHEN ((OLD.state = 'waiting') IS DISTINCT FROM (NEW.state = 'waiting')
        OR OLD.quantity IS DISTINCT FROM NEW.quantity
        OR OLD.workshop IS DISTINCT FROM NEW.workshop
        OR OLD.actor IS DISTINCT FROM NEW.actor)
    EXECUTE FUNCTION reserve_count_waiting();

-- places_of_rows is what the rows add up to, each (workshop, actor) with
-- places once: what fills the table, and what reserved check compares it
-- with.
CREATE VIEW places_of_rows AS
SELECT workshop, actor, sum(reserved)::bigint AS reserved, sum(waiting)::bigint AS waiting
FROM (
    SELECT workshop, actor, quantity AS reserved, 0 AS waiting FROM reservations WHERE cancelled_at IS NULL
    UNION ALL
    SELECT workshop, actor, 0, quantity FROM wait_entries WHERE state = 'waiting'
) AS places
GROUP BY workshop, actor
HAVING sum(reserved) <> 0 OR sum(waiting) <> 0;

INSERT INTO places_by_person (workshop, actor, reserved, waiting)
SELECT workshop, actor, reserved, waiting FROM places_of_rows;
