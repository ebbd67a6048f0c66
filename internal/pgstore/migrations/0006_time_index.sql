-- reserve:no-transaction
-- 0006_time_index indexes receipts and tombstones by the time they were
-- created, in the order of the store's time-ordered scans, so that receipt
-- expiry finds the oldest receipts and the operations view the newest
-- records without reading the tables. The indexes are built concurrently,
-- which does not block writes to the tables, and so outside a transaction.

CREATE INDEX CONCURRENTLY IF NOT EXISTS receipts_by_time ON receipts (created_at, actor, operation_key);

CREATE INDEX CONCURRENTLY IF NOT EXISTS tombstones_by_time ON tombstones (created_at, actor, operation_key);
