-- reserve:no-transaction
-- 0007_actor_index indexes reservations and holds by actor and id (ids
-- start with their creation time), so that a person's own reservations and
-- holds, newest first, are read one page at a time without reading the
-- tables. The indexes are built concurrently, which does not block writes
-- to the tables, and so outside a transaction.

CREATE INDEX CONCURRENTLY IF NOT EXISTS reservations_by_actor ON reservations (actor, id);

CREATE INDEX CONCURRENTLY IF NOT EXISTS holds_by_actor ON holds (actor, id);
