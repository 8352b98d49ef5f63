package io.txoutbox.spring.internal;

import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The two Actuator views of core's {@link OutboxHealth}. {@link #status()}: DOWN only for what is wrong with this
 * instance itself — the outbox cannot be read, or its relay stopped on its own (a missing privilege, a fencing id
 * taken by another outbox) — and UP otherwise, also on a standby that owns no lane; the outbox check's verdict,
 * reasons, backlog and lane coverage are details. {@link #readiness()}: DOWN while the outbox check fails (an old
 * pending event, a stalled lane, parked or dead events growing), for a readiness group only.
 */
public final class OutboxHealthIndicators {

    private final OutboxHealth health;
    private final DataSource dataSource;
    private final OutboxSchema schema;
    private final PollingRelay relay;

    /** {@code relay}: this application's relay, or null when it runs none. */
    public OutboxHealthIndicators(OutboxHealth health, DataSource dataSource, OutboxSchema schema, PollingRelay relay) {
        this.health = health;
        this.dataSource = dataSource;
        this.schema = schema;
        this.relay = relay;
    }

    public HealthIndicator status() {
        return () -> {
            OutboxHealth.Result r = health.check();
            boolean down = r.backlog() == null || (relay != null && relay.failure().isPresent());
            return (down ? Health.down() : Health.up()).withDetails(details(r)).build();
        };
    }

    public HealthIndicator readiness() {
        return () -> {
            OutboxHealth.Result r = health.check();
            return (r.isUp() ? Health.up() : Health.down()).withDetail("reasons", r.reasons()).build();
        };
    }

    private Map<String, Object> details(OutboxHealth.Result r) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("outbox", r.isUp() ? "UP" : "DOWN");
        d.put("reasons", r.reasons());
        if (r.backlog() != null) {
            d.put("pending", r.backlog().pending());
            d.put("oldestPendingAge", r.backlog().oldestPendingAge().toString());
            d.put("parkedKeys", r.backlog().parkedKeys());
            d.put("deadEvents", r.backlog().deadEvents());
        }
        if (relay != null) {
            int lanes = relay.config().lanes();
            d.put("instance", relay.instanceId());
            d.put("lanes", lanes);
            d.put("lanesOwnedHere", relay.lanes().size());
            try {
                Set<Integer> owned = OutboxStatus.lanes(dataSource, schema).stream()
                        .map(OutboxStatus.LaneOwner::lane).collect(Collectors.toSet());
                d.put("lanesWithoutOwner", (int) java.util.stream.IntStream.range(0, lanes)
                        .filter(l -> !owned.contains(l)).count());
            } catch (RuntimeException e) {
                d.put("lanesWithoutOwner", "unknown: " + e.getMessage());
            }
            relay.failure().ifPresent(f -> d.put("relayStopped", f.getMessage()));
        } else {
            d.put("relay", "not in this application (txoutbox.relay.enabled=false)");
        }
        return d;
    }
}
