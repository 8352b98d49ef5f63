package io.txoutbox.testing.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A fault hook inside the in-process broker: while {@link #hold() held}, the transaction coordinator's marker writes
 * (the {@code WriteTxnMarkers} requests it sends to each partition's leader — over the inter-broker listener, to
 * itself on a single node) wait until the test {@link #release() releases} them. A committed transaction then stays
 * "completing" on the coordinator for exactly as long as the test wants: the producer's commit has returned (with
 * transactions v2 the coordinator answers once the commit is logged, before the markers), its records are not yet
 * visible to {@code read_committed} consumers, and the same producer's next transaction is refused
 * {@code CONCURRENT_TRANSACTIONS} until the markers are written. That is the situation a busy broker creates by luck;
 * here it is forced.
 *
 * <p>It is the broker's authorizer ({@code authorizer.class.name}, set by {@link KafkaBroker.Builder#markerGate()}):
 * it allows every action, and holds a {@code WriteTxnMarkers} request on the request handler thread where the broker
 * checks it ({@code CLUSTER_ACTION}). The gate is one per JVM (the broker makes the instance from the class name), so
 * only one broker of a test JVM should use it; a marker write is never held longer than {@link #MAX_HOLD}, so a test
 * that forgets to release cannot wedge the broker for the tests after it.
 */
public final class MarkerGate implements Authorizer {

    /** The longest a marker write waits, released or not. */
    public static final Duration MAX_HOLD = Duration.ofSeconds(30);

    private static final Logger log = LoggerFactory.getLogger(MarkerGate.class);
    private static final Object lock = new Object();
    private static boolean holding;
    private static int waiting;
    private static long heldTotal;

    /** Made by the broker; tests use the static methods. */
    public MarkerGate() {
    }

    /** From now on marker writes wait until {@link #release()}. */
    public static void hold() {
        synchronized (lock) {
            holding = true;
        }
        log.info("MarkerGate: holding the transaction markers");
    }

    /** Lets the waiting marker writes go, and every later one pass. Idempotent. */
    public static void release() {
        int released;
        synchronized (lock) {
            holding = false;
            released = waiting;
            lock.notifyAll();
        }
        log.info("MarkerGate: released ({} marker writes were waiting)", released);
    }

    /** How many marker writes wait at the gate now. */
    public static int waiting() {
        synchronized (lock) {
            return waiting;
        }
    }

    /** How many marker writes have waited at the gate since the JVM started. */
    public static long heldTotal() {
        synchronized (lock) {
            return heldTotal;
        }
    }

    /** Waits until at least {@code count} marker writes wait at the gate; false when {@code timeout} passed first. */
    public static boolean awaitWaiting(int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (lock) {
            while (waiting < count) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(lock, left);
            }
            return true;
        }
    }

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext context, List<Action> actions) {
        if (context.requestType() == ApiKeys.WRITE_TXN_MARKERS.id) {
            awaitRelease();
        }
        List<AuthorizationResult> results = new ArrayList<>(actions.size());
        actions.forEach(a -> results.add(AuthorizationResult.ALLOWED));
        return results;
    }

    private static void awaitRelease() {
        long deadline = System.nanoTime() + MAX_HOLD.toNanos();
        boolean interrupted = false;
        synchronized (lock) {
            if (!holding) {
                return;
            }
            waiting++;
            heldTotal++;
            lock.notifyAll();
            try {
                while (holding) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        log.warn("MarkerGate: a marker write waited {} without a release; letting it pass", MAX_HOLD);
                        break;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(lock, left);
                    } catch (InterruptedException e) {
                        interrupted = true; // the broker is shutting down: let the request go
                        break;
                    }
                }
            } finally {
                waiting--;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public AuthorizationResult authorizeByResourceType(AuthorizableRequestContext context, AclOperation op,
            ResourceType resourceType) {
        return AuthorizationResult.ALLOWED;
    }

    @Override
    public Map<Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo serverInfo) {
        return serverInfo.endpoints().stream()
                .collect(Collectors.toMap(Function.identity(), e -> CompletableFuture.<Void>completedFuture(null)));
    }

    @Override
    public List<? extends CompletionStage<AclCreateResult>> createAcls(AuthorizableRequestContext context,
            List<AclBinding> bindings) {
        throw new UnsupportedOperationException("MarkerGate allows everything and stores no ACLs");
    }

    @Override
    public List<? extends CompletionStage<AclDeleteResult>> deleteAcls(AuthorizableRequestContext context,
            List<AclBindingFilter> filters) {
        throw new UnsupportedOperationException("MarkerGate allows everything and stores no ACLs");
    }

    @Override
    public Iterable<AclBinding> acls(AclBindingFilter filter) {
        return List.of();
    }

    @Override
    public void configure(Map<String, ?> configs) {
        // nothing to configure: the gate is driven by the test through the static methods
    }

    @Override
    public void close() {
        release();
    }
}
