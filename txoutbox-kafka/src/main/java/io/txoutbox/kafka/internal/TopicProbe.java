package io.txoutbox.kafka.internal;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells a missing topic from an unreachable broker. The producer reports both as "not present in metadata"; only a
 * broker that answers "unknown topic" makes the failure permanent.
 */
final class TopicProbe {

    private static final Logger log = LoggerFactory.getLogger(TopicProbe.class);

    /** Assumed {@code max.message.bytes} of a topic whose configuration cannot be read (no DescribeConfigs). */
    static final int FALLBACK_MAX_MESSAGE_BYTES = 16_384;
    private static final long LIMIT_TTL_NANOS = TimeUnit.MINUTES.toNanos(10);

    private final Map<String, Object> adminProperties;
    private final long timeoutMs;
    private final Map<String, long[]> limits = new java.util.concurrent.ConcurrentHashMap<>();

    TopicProbe(Map<String, Object> adminProperties, long timeoutMs) {
        this.adminProperties = adminProperties;
        this.timeoutMs = timeoutMs;
    }

    /**
     * The topic's {@code max.message.bytes} (the largest record batch its partitions accept), read once and kept
     * for ten minutes; {@value #FALLBACK_MAX_MESSAGE_BYTES} when it cannot be read (logged once per topic).
     */
    int maxMessageBytes(String topic) {
        long[] cached = limits.get(topic);
        if (cached != null && System.nanoTime() - cached[1] < LIMIT_TTL_NANOS) {
            return (int) cached[0];
        }
        int limit;
        try (Admin admin = Admin.create(adminProperties)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(resource)).all().get(timeoutMs, TimeUnit.MILLISECONDS)
                    .get(resource);
            ConfigEntry entry = config == null ? null : config.get("max.message.bytes");
            limit = Integer.parseInt(entry.value());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return FALLBACK_MAX_MESSAGE_BYTES;
        } catch (Exception e) {
            if (cached == null) {
                log.warn("txoutbox-kafka: cannot read max.message.bytes of topic '{}' ({}); assuming {} bytes, which "
                        + "keeps idempotent batches small: allow DescribeConfigs on the topic", topic, e.toString(),
                        FALLBACK_MAX_MESSAGE_BYTES);
            }
            limit = FALLBACK_MAX_MESSAGE_BYTES;
        }
        limits.put(topic, new long[] {limit, System.nanoTime()});
        return limit;
    }

    /** The broker rejected a record batch of this topic as too large: read its limit again next time. */
    void forgetLimit(String topic) {
        limits.remove(topic);
    }

    /** True only when a broker answered that the topic does not exist; false on any doubt. */
    boolean confirmedMissing(String topic) {
        Admin admin = null;
        try {
            admin = Admin.create(adminProperties);
            admin.describeTopics(List.of(topic)).allTopicNames().get(timeoutMs, TimeUnit.MILLISECONDS);
            return false;
        } catch (ExecutionException e) {
            return e.getCause() instanceof UnknownTopicOrPartitionException;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (Exception e) {
            log.debug("txoutbox-kafka: could not check whether topic '{}' exists: {}", topic, e.toString());
            return false;
        } finally {
            if (admin != null) {
                admin.close(Duration.ofMillis(Math.min(timeoutMs, 1000)));
            }
        }
    }
}
