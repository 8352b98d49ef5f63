--liquibase formatted sql

--changeset orders:1
--comment: the application's own first changeset: txoutbox's tables never appear in its changelog
CREATE TABLE orders (id text PRIMARY KEY, total numeric NOT NULL);
