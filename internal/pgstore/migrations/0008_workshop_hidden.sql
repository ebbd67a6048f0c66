-- 0008_workshop_hidden adds hidden workshops: left out of the workshop list
-- unless it asks for them, and otherwise like any other. The column has a
-- constant default, so adding it does not rewrite the table. A daemon of an
-- earlier version, still running while this one migrates, neither reads
-- nor writes the column: it lists a hidden workshop, which is harmless,
-- and its updates of a workshop leave the column as it is.
ALTER TABLE workshops ADD COLUMN hidden BOOLEAN NOT NULL DEFAULT false;
