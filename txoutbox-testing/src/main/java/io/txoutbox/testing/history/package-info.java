/**
 * History checking for reliability tests: what committed versus what arrived.
 *
 * <ul>
 *   <li>{@link io.txoutbox.testing.history.LedgerWriter} runs concurrent PostgreSQL writer transactions that record
 *       every event in a ledger table next to the outbox insert (done by a callback, so this module does not
 *       depend on txoutbox-core); {@link io.txoutbox.testing.history.Ledger#read} reads back what committed.</li>
 *   <li>{@link io.txoutbox.testing.history.Verifier} reads a whole Kafka topic with {@code read_committed}.</li>
 *   <li>{@link io.txoutbox.testing.history.HistoryChecker} compares both and produces a
 *       {@link io.txoutbox.testing.history.HistoryReport}: lost, phantom, duplicated events, per-key first-delivery
 *       order violations, keys on several partitions and the longest stall;
 *       {@link io.txoutbox.testing.history.HistoryAssert} turns it into test assertions.</li>
 * </ul>
 */
package io.txoutbox.testing.history;
