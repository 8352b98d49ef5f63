package io.txoutbox.spring.internal;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.spring.AggregateEvent;
import io.txoutbox.spring.OutboxEventPublisher;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.IntConsumer;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The {@link OutboxEventPublisher} of the starter: joins the transaction that Spring bound to the outbox's
 * {@code DataSource} ({@link DataSourceUtils}: a {@code DataSourceTransactionManager}, a {@code JpaTransactionManager}
 * exposing its JDBC connection, jOOQ on a transaction-aware proxy of the same pool), INSERTs through core's
 * {@link Outbox}, and wakes the in-process relay once per transaction after it commits.
 */
public final class SpringOutboxEventPublisher implements OutboxEventPublisher {

    private final DataSource dataSource;
    private final Outbox outbox;
    private final IntConsumer afterCommit;
    private final TraceHeaders trace;

    /**
     * {@code afterCommit}: run after each transaction that published commits, once for each shard it wrote (the
     * relay's nudge of that shard's lane), or null; {@code trace}: adds the current trace context to each event's
     * headers, or null.
     */
    public SpringOutboxEventPublisher(DataSource dataSource, Outbox outbox, IntConsumer afterCommit,
            TraceHeaders trace) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.outbox = Objects.requireNonNull(outbox, "outbox");
        this.afterCommit = afterCommit;
        this.trace = trace;
    }

    @Override
    public UUID publish(String topic, String key, Object event) {
        return publish(topic, key, event, Map.of());
    }

    @Override
    public UUID publish(String topic, String key, Object event, Map<String, String> headers) {
        Objects.requireNonNull(event, "event must not be null");
        OutboxMessage.Builder message = OutboxMessage.builder().topic(topic)
                .eventType(event.getClass().getSimpleName()).objectPayload(event).headers(headers);
        if (event instanceof AggregateEvent a) {
            message.aggregate(a.aggregateType(), a.aggregateId());
            if (a.aggregateVersion() != null) {
                message.aggregateVersion(a.aggregateVersion());
            }
        } else {
            if (key == null) {
                throw new IllegalArgumentException("outboxEventPublisher.publish(\"" + topic + "\", null, "
                        + event.getClass().getSimpleName() + "): an event without a key needs an aggregate: let "
                        + event.getClass().getSimpleName() + " implement io.txoutbox.spring.AggregateEvent, or "
                        + "publish(OutboxMessage) with .aggregate(type, id)");
            }
            message.aggregate(topic, key);
        }
        return publish(message.key(key).build());
    }

    @Override
    public UUID publish(OutboxMessage message) {
        return publish(List.of(message)).get(0);
    }

    @Override
    public List<UUID> publish(List<OutboxMessage> messages) {
        requireTransaction();
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            if (!DataSourceUtils.isConnectionTransactional(connection, dataSource)) {
                throw new IllegalStateException(notInTransaction("the transaction in progress is not on the outbox's "
                        + "DataSource (another transaction manager or another DataSource)"));
            }
            List<OutboxMessage> traced = traced(messages);
            List<UUID> ids = outbox.publish(connection, traced);
            if (afterCommit != null) {
                OutboxSchema schema = outbox.config().schema();
                BitSet shards = new BitSet(schema.shards());
                for (OutboxMessage m : traced) {
                    shards.set(schema.shardOf(m));
                }
                AfterCommit.shards(this, afterCommit, shards);
            }
            return ids;
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    /** The messages with the current trace context's headers where they do not set those headers themselves. */
    private List<OutboxMessage> traced(List<OutboxMessage> messages) {
        if (trace == null) {
            return messages;
        }
        Map<String, String> context = new LinkedHashMap<>();
        trace.addTo(context);
        if (context.isEmpty()) {
            return messages;
        }
        List<OutboxMessage> out = new ArrayList<>(messages.size());
        for (OutboxMessage m : messages) {
            Map<String, String> missing = new LinkedHashMap<>(context);
            missing.keySet().removeAll(m.headers().keySet());
            out.add(missing.isEmpty() ? m : m.toBuilder().headers(missing).build());
        }
        return out;
    }

    private static void requireTransaction() {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException(notInTransaction("there is no transaction in progress"));
        }
    }

    static String notInTransaction(String why) {
        return "outboxEventPublisher.publish needs a Spring-managed transaction on the outbox's DataSource, and " + why
                + ": run it inside a @Transactional method (or TransactionTemplate) together with the business "
                + "changes, so the event commits or rolls back with them. Nothing was written.";
    }
}
