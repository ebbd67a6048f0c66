-- reserve:no-transaction
-- 0012_workshop_index indexes reservations and holds by workshop, actor
-- and id: one actor's records in a workshop (for the limit per person) and
-- a workshop's attendee list, page by page, are each one range of it. The
-- indexes are built concurrently, which does not block writes to the
-- tables, and so outside a transaction.

CREATE INDEX CONCURRENTLY IF NOT EXISTS reservations_by_workshop ON reservations (workshop, actor, id);

CREATE INDEX CONCURRENTLY IF NOT EXISTS holds_by_workshop ON holds (workshop, actor, id);
