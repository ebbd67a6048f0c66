-- 0011_workshop_schedule gives workshops a schedule (description, place,
-- start and end, time zone, registration window, limit per person) and
-- tombstones the limit a limit_reached answer reported. The new columns
-- have constant defaults or are nullable, so adding them rewrites no
-- table; a daemon of an earlier version, still running while this one
-- migrates, neither reads nor writes them and keeps deciding as before.
ALTER TABLE workshops
    ADD COLUMN description            TEXT NOT NULL DEFAULT '',
    ADD COLUMN location               TEXT NOT NULL DEFAULT '',
    ADD COLUMN time_zone              TEXT NOT NULL DEFAULT '',
    ADD COLUMN starts_at              TIMESTAMPTZ NULL,
    ADD COLUMN ends_at                TIMESTAMPTZ NULL,
    ADD COLUMN registration_opens_at  TIMESTAMPTZ NULL,
    ADD COLUMN registration_closes_at TIMESTAMPTZ NULL,
    ADD COLUMN max_per_person         BIGINT NOT NULL DEFAULT 0;

ALTER TABLE tombstones
    ADD COLUMN max_per_person BIGINT NULL,
    ADD COLUMN already        BIGINT NULL;
