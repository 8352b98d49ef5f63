/**
 * Kafka transport for the txoutbox relay.
 *
 * <p>Entry point: {@link io.txoutbox.kafka.KafkaTransport#builder()}. Each relay lane gets one transactional producer
 * ({@code transactional.id = prefix + lane}) and one thread; each batch is one Kafka transaction, so a batch is
 * visible to {@code read_committed} consumers completely or not at all, and a newer relay instance on the same lane
 * fences an older one. Headers written on every record are listed in {@link io.txoutbox.kafka.KafkaHeaders}.
 *
 * <p>Consumers must read with {@code isolation.level=read_committed}; with the default {@code read_uncommitted} they
 * also see records of aborted transactions.
 */
package io.txoutbox.kafka;
