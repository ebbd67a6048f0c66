-- 0009_identity_bindings adds the bindings of subjects to actors. A
-- subject is what stays the same about a caller: its kind ('uid' for a
-- Unix socket peer) and its id within the kind (the uid in decimal). The
-- first request of a subject binds it to one actor for the life of the
-- database, and every later request of it acts as that actor, whatever its
-- name has become, so a retry with the same operation key finds its
-- receipt. The primary key binds a subject once; the unique actor keeps an
-- actor name from ever moving to another subject. Two daemons that bind
-- one subject at once, or two subjects to one name, collide on them: the
-- second transaction fails with a unique violation, runs again, and finds
-- the first one's binding.
--
-- The table is new and no existing row changes: every actor named in the
-- database keeps its receipts, and a subject's first request after the
-- migration binds it to the actor name it resolves to then. A daemon of an
-- earlier version, still running while this one migrates, keeps naming
-- socket peers by their user name of the moment, as it did before.
CREATE TABLE actor_bindings (
    subject_kind TEXT COLLATE "C" NOT NULL,
    subject_id   TEXT COLLATE "C" NOT NULL,
    actor        TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (subject_kind, subject_id)
);
