-- 0004_answer_status stores the status word of each receipt's answer, from
-- which (with the kind of operation its fingerprint version names) the
-- server derives the HTTP status, instead of the HTTP status itself. Rows
-- written before get the status their HTTP status stood for; the body stays
-- as it was written and is replayed byte for byte. Tombstones already keep
-- the status.

ALTER TABLE receipts ADD COLUMN status TEXT NOT NULL DEFAULT '';

UPDATE receipts SET status = CASE
    WHEN fingerprint_version = 1 AND http_status = 201 THEN 'reserved'
    WHEN fingerprint_version = 1 AND http_status = 409 THEN 'unavailable'
    WHEN fingerprint_version = 2 AND http_status = 200 THEN 'cancelled'
    WHEN fingerprint_version = 2 AND http_status = 409 THEN 'already_cancelled'
    ELSE ''
END;

ALTER TABLE receipts ALTER COLUMN status DROP DEFAULT;
ALTER TABLE receipts DROP COLUMN http_status;
ALTER TABLE tombstones DROP COLUMN http_status;
