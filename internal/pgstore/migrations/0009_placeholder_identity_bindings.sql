-- 0009 is the identity bindings' migration, made on another branch; this
-- placeholder keeps the versions without a gap until that branch is merged,
-- which replaces this file with its own 0009. It changes nothing.
SELECT 1;
