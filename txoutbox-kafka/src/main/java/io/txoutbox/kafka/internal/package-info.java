/**
 * The Kafka module's implementation, behind the public entry points of {@code io.txoutbox.kafka}: not an API, may
 * change in any release. Other modules must not use it.
 *
 * <p>Producer side ({@code KafkaTransport}): {@code LaneProducers} makes a {@code LaneWorker} (one thread) per
 * relay lane, whose {@code LaneProducer} owns the lane's producer and sends each batch by mode
 * ({@code TransactionalSend}, {@code IdempotentSend}); {@code RecordMapper}, {@code BatchAttempt}, {@code Failures},
 * {@code PartitionQuarantine}, {@code PartitionBudget}, {@code TransactionalIds}, {@code TopicProbe} and
 * {@code ConnectionTrouble} serve them; {@code ProducerSettings} derives what they need from the config record.
 *
 * <p>Consumer side ({@code KafkaInboxConsumer}): {@code ConsumerLoop} polls and commits; its {@code ConsumerMode}
 * is {@code StoreMode} or {@code HandleMode}; {@code InboxMessages} maps records (their event ids from
 * {@code RecordEventIds}), {@code DeadLetters} sends the rejected ones to the dead-letter topic.
 */
package io.txoutbox.kafka.internal;
