package io.txoutbox.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells a missing topic from an unreachable broker. The producer reports both as "not present in metadata"; only a
 * broker that answers "unknown topic" makes the failure permanent.
 */
final class TopicProbe {

    private static final Logger log = LoggerFactory.getLogger(TopicProbe.class);

    private final Map<String, Object> adminProperties;
    private final long timeoutMs;

    TopicProbe(Map<String, Object> adminProperties, long timeoutMs) {
        this.adminProperties = adminProperties;
        this.timeoutMs = timeoutMs;
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
