-- The chain positions of an export file's entries (lowest and highest), for its signed manifest: the range of
-- the log's hash chain the file was drawn from (GET /v1/logs/verify?from=&to= checks that range).
ALTER TABLE export_jobs ADD COLUMN first_position bigint, ADD COLUMN last_position bigint;
