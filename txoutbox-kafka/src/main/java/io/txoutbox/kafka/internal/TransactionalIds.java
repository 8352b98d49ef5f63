package io.txoutbox.kafka.internal;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.kafka.clients.producer.Producer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Mode.TRANSACTIONAL: the lane's two transactional ids, its own ({@link ProducerSettings#transactionalId}) and
 * that id + {@code "-spare"}.
 *
 * <p>A transaction that touched a partition which then failed cannot end until that partition heals: its abort
 * markers must be written there too, and until they are, the broker answers every later transaction of the same
 * transactional.id "concurrent transactions". So when a batch quarantines a partition, the lane leaves the blocked id
 * and works on the other one. Fencing holds: whenever the lane creates a producer it also initialises the other id
 * (which fences a zombie holding it), except an id the lane knows is blocked — a zombie holding that one is blocked by
 * the same unfinished transaction until the partition heals, and the lane fences it as soon as its quarantine is
 * empty again.
 */
final class TransactionalIds {

    private static final Logger log = LoggerFactory.getLogger(TransactionalIds.class);
    static final String SPARE_SUFFIX = "-spare";
    private static final long RETRY_NANOS = Duration.ofSeconds(30).toNanos();

    private final String lane;
    private final String transactionalId;
    private final ProducerSettings settings;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private boolean spare;
    /** The id left behind blocked, or null. */
    private String blocked;
    private long lastFenceTry;

    TransactionalIds(String lane, String transactionalId, ProducerSettings settings,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this.lane = lane;
        this.transactionalId = transactionalId;
        this.settings = settings;
        this.producerFactory = producerFactory;
    }

    String current() {
        return id(spare);
    }

    private String id(boolean spareId) {
        return transactionalId + (spareId ? SPARE_SUFFIX : "");
    }

    Map<String, Object> producerProperties() {
        return properties(current());
    }

    private Map<String, Object> properties(String transactionalId) {
        return new TreeMap<>(settings.producerProperties(lane, transactionalId));
    }

    /** The current id's transaction waits for a quarantined partition: the next producer uses the other id. */
    void blocked() {
        blocked = current();
        spare = !spare;
        lastFenceTry = System.nanoTime();
        log.warn("txoutbox-kafka: lane {}: transactional.id '{}' waits for its aborted transaction's markers on a "
                + "quarantined partition; the lane goes on with '{}'", lane, blocked, current());
    }

    /** After the producer of the current id is ready: fences the other id, unless it is known to be blocked. */
    void fenceOther() {
        String other = id(!spare);
        if (!other.equals(blocked)) {
            fence(other);
        }
    }

    /** The quarantine is empty: the blocked id can end its transaction now, so fence it (at most every 30 s). */
    void fenceHealed() {
        if (blocked == null || System.nanoTime() - lastFenceTry < RETRY_NANOS / 60) {
            return;
        }
        lastFenceTry = System.nanoTime();
        if (fence(blocked)) {
            blocked = null;
        } else {
            lastFenceTry += RETRY_NANOS;
        }
    }

    private boolean fence(String transactionalId) {
        Producer<byte[], byte[]> p = null;
        try {
            p = producerFactory.apply(properties(transactionalId));
            p.initTransactions();
            log.debug("txoutbox-kafka: lane {}: fenced transactional.id '{}'", lane, transactionalId);
            return true;
        } catch (RuntimeException e) {
            log.warn("txoutbox-kafka: lane {}: could not fence transactional.id '{}' ({}); will try again", lane,
                    transactionalId, e.toString());
            return false;
        } finally {
            if (p != null) {
                try {
                    p.close(Duration.ZERO);
                } catch (RuntimeException ignored) {
                    // closing a producer that never worked
                }
            }
        }
    }
}
