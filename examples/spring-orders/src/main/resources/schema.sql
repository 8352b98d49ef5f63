-- The application's own tables (Spring's spring.sql.init; the starter creates the outbox's and inbox's).
-- created_at and paid_at use clock_timestamp(): the time of the row's INSERT, a moment before its commit, on the
-- database's one clock; the demo's latency is paid_at - created_at.
CREATE TABLE IF NOT EXISTS orders (
    id          uuid          PRIMARY KEY,
    customer_id text          NOT NULL,
    total       numeric(12,2) NOT NULL,
    created_at  timestamptz   NOT NULL DEFAULT clock_timestamp()
);
-- Not unique on order_id on purpose: the demo counts payments per order, and a second payment must show up there
-- (a real service would add the constraint as well).
CREATE TABLE IF NOT EXISTS payments (
    id       bigint        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id uuid          NOT NULL,
    amount   numeric(12,2) NOT NULL,
    paid_at  timestamptz   NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS payments_order_id ON payments (order_id);
CREATE INDEX IF NOT EXISTS orders_created_at ON orders (created_at);
