-- The application's own first migration: txoutbox's scripts must never clash with it.
CREATE TABLE orders (id text PRIMARY KEY, total numeric NOT NULL);
