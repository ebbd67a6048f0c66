-- 0013_profiles adds the profiles of actors: the name a person chose to be
-- shown as and the language of the pages and mails, "" when not chosen.
-- A profile is keyed by its actor; an actor without a row has no display
-- name and no language. The table is new and no existing row changes; a
-- daemon of an earlier version, still running while this one migrates,
-- neither reads nor writes it.
CREATE TABLE profiles (
    actor        TEXT COLLATE "C" PRIMARY KEY,
    display_name TEXT NOT NULL,
    language     TEXT COLLATE "C" NOT NULL
);
