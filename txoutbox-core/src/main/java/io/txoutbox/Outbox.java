package io.txoutbox;

import io.txoutbox.internal.DefaultOutbox;
import io.txoutbox.internal.config.Checks;
import io.txoutbox.spi.PayloadSerializer;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Writes events into the outbox table through the caller's connection, inside the caller's transaction: the events
 * exist if and only if that transaction commits.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.builder().build();                 // once, thread-safe
 *
 * connection.setAutoCommit(false);
 * insertOrder(connection, order);                           // business rows
 * outbox.publish(connection, OutboxMessage.builder()
 *         .topic("orders").aggregate("Order", order.id())
 *         .eventType("OrderCreated").jsonPayload(json).build());
 * connection.commit();                                      // both or neither
 * }</pre>
 *
 * {@code publish} never opens, commits or rolls back a transaction. Every message is validated in the client before
 * the INSERT, so a bad message throws {@link InvalidMessageException} and leaves the transaction usable.
 *
 * <p><b>Ordering rule for writers.</b> Events of one partition key are delivered in the order of their outbox ids.
 * Ids are taken at INSERT, not at commit: lock the aggregate's row (or the key's) before inserting its event, e.g.
 * {@code SELECT … FOR UPDATE} or the UPDATE of the aggregate, so that two transactions of the same key commit in id
 * order.
 */
public interface Outbox {

    /** Writes the messages with one INSERT statement (up to {@value #MAX_ROWS_PER_STATEMENT} rows per statement). */
    List<UUID> publish(Connection connection, List<OutboxMessage> messages);

    /** Writes the messages; see {@link #publish(Connection, List)}. Returns their event ids, in call order. */
    default List<UUID> publish(Connection connection, OutboxMessage... messages) {
        return publish(connection, List.of(messages));
    }

    /** The configuration this outbox was built with. */
    OutboxConfig config();

    /** Rows per INSERT statement; larger calls use several statements in the same transaction. */
    int MAX_ROWS_PER_STATEMENT = 1000;

    static Builder builder() {
        return new Builder();
    }

    /** Validating builder; {@link #build()} fails fast on bad values and names the property at fault. */
    final class Builder {
        private OutboxSchema schema = OutboxSchema.defaults();
        private PayloadSerializer serializer = PayloadSerializer.none();
        private int maxPayloadBytes = OutboxConfig.DEFAULT_MAX_PAYLOAD_BYTES;
        private int maxHeaderBytes = OutboxConfig.DEFAULT_MAX_HEADER_BYTES;
        private Runnable afterPublish;
        private PollingRelay relay;
        private boolean notifyOnPublish = OutboxConfig.DEFAULT_NOTIFY_ON_PUBLISH;

        private Builder() {
        }

        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("outbox", schema);
            return this;
        }

        public Builder payloadSerializer(PayloadSerializer serializer) {
            this.serializer = java.util.Objects.requireNonNull(serializer, "payloadSerializer");
            return this;
        }

        /** Largest payload in bytes (UTF-8 for JSON), default {@value OutboxConfig#DEFAULT_MAX_PAYLOAD_BYTES}. */
        public Builder maxPayloadBytes(int maxPayloadBytes) {
            this.maxPayloadBytes = maxPayloadBytes;
            return this;
        }

        /** Largest sum of header names and values in UTF-8 bytes, default {@value OutboxConfig#DEFAULT_MAX_HEADER_BYTES}. */
        public Builder maxHeaderBytes(int maxHeaderBytes) {
            this.maxHeaderBytes = maxHeaderBytes;
            return this;
        }

        /**
         * Called after each successful publish, e.g. by an in-process relay to poll soon. It runs before the caller
         * commits, so it must only schedule work, never wait for it.
         */
        public Builder afterPublish(Runnable afterPublish) {
            this.afterPublish = afterPublish;
            return this;
        }

        /**
         * After each successful publish, nudges the lanes of this in-process relay that work the shards the publish
         * wrote ({@link PollingRelay#nudge(int)}), so it polls soon; its other lanes sleep on. Preferred over
         * {@code afterPublish(relay::nudge)}, which wakes every lane for every publish, each of which then claims:
         * measured at 1,000 events/s, the same relay CPU per event, fewer claims that find nothing and a lower p99
         * (BENCHMARKS.md, "Nudging the written shards' lanes"). Runs before the caller commits, like
         * {@link #afterPublish}; the relay's schema must be this outbox's.
         */
        public Builder nudge(PollingRelay relay) {
            this.relay = relay;
            return this;
        }

        /**
         * Also {@code NOTIFY} the relay's channel in the writing transaction (delivered at commit), for relays in
         * other processes ({@link PollingRelay.Builder#listenNotify(boolean)}). Off by default: NOTIFY takes a
         * cluster-wide lock through the commit, which slows concurrent writers (figures: BENCHMARKS.md, "Figures
         * moved out of the code and the docs").
         */
        public Builder notifyOnPublish(boolean notifyOnPublish) {
            this.notifyOnPublish = notifyOnPublish;
            return this;
        }

        /**
         * Applies settings by their names in {@link OutboxConfig#DESCRIPTOR} ({@code "max-payload-bytes"} or
         * {@code "txoutbox.outbox.max-payload-bytes"}), each value its text form ({@code "1MB"}) or typed; an unknown
         * name or an unreadable value fails and changes nothing.
         */
        public Builder settings(Map<String, ?> settings) {
            return OutboxConfig.DESCRIPTOR.apply(this, settings);
        }

        public Outbox build() {
            return new DefaultOutbox(new OutboxConfig(schema, serializer, maxPayloadBytes, maxHeaderBytes,
                    notifyOnPublish), afterPublish, relay);
        }
    }
}
