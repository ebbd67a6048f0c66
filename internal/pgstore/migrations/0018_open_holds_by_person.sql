-- reserve:no-transaction
-- 0018_open_holds_by_person indexes the open holds by workshop, actor and
-- deadline, with their quantity: the places an actor holds in a workshop
-- at a time (those of the open holds whose deadline has not passed), which
-- a limit per person counts beside the counts of migration 0017, are one
-- short range of it, read from the index alone, however many settled
-- holds the actor has. The index is built concurrently, which does not
-- block writes to holds, and so outside a transaction.

CREATE INDEX CONCURRENTLY IF NOT EXISTS holds_open_by_person ON holds (workshop, actor, expires_at) INCLUDE (quantity) WHERE state = 'held';
