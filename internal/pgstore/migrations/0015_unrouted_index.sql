-- reserve:no-transaction
-- 0015_unrouted_index indexes the events that are not routed yet, so that
-- routing finds them without reading the routed ones. The index is built
-- concurrently, which does not block writes to events (every reservation
-- writes one), and so outside a transaction.

CREATE INDEX CONCURRENTLY IF NOT EXISTS events_unrouted ON events (id) WHERE NOT routed;
