-- W3C trace context (docs/operations.md, "Tracing"). outbox: the traceparent of the span that wrote each
-- log.export.* event, published with it for the audit consumer's span. export_jobs: the traceparent of the
-- request that created the job, whose trace each worker run continues. NULL: none recorded.
ALTER TABLE outbox ADD COLUMN traceparent text;
ALTER TABLE export_jobs ADD COLUMN traceparent text;
