-- The W3C traceparent of the span that wrote each event: the outbox relay publishes it with the event, and
-- the audit consumer's span continues that trace (docs/operations.md, "Tracing"). NULL: written outside a trace.
ALTER TABLE outbox ADD COLUMN traceparent text;
