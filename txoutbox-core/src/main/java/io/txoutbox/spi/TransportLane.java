package io.txoutbox.spi;

import java.util.Objects;
import java.util.UUID;

/**
 * The relay lane a batch comes from, as {@link Transport#send(TransportLane, java.util.List)} receives it: which
 * outbox, which lane of it, and who sends. Immutable; the relay makes one per lane when it takes the lane.
 *
 * <p>Ownership of a lane is by outbox table and lane index (a session advisory lock in PostgreSQL), whatever the relay
 * is called, so a transport that fences older senders of a lane keys it by {@link #fencingKey()}: the same for every
 * instance and restart of one outbox, different for every other outbox.
 *
 * @param name           the lane's name in logs: {@code <relay name>-<index>}, plus {@code -dlt} for dead letters
 * @param index          the lane's index (0 to {@code relay.lanes - 1})
 * @param installationId the outbox's installation id, made once by {@code migrate} and stored in
 *                       {@code <outbox_table>_installation}: shared by every instance, restart, replica and failover
 *                       of this outbox, different for every other outbox
 * @param outbox         where the outbox lives, for messages: {@code <database>/<schema>.<table>}
 * @param instance       the relay instance that owns the lane now ({@code <name>@<host>:<pid>#<n>})
 * @param deadLetter     whether this lane sends the dead-letter topic's records of its lane
 */
public record TransportLane(String name, int index, UUID installationId, String outbox, String instance,
        boolean deadLetter) {

    public TransportLane {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(installationId, "installationId");
        Objects.requireNonNull(outbox, "outbox");
        Objects.requireNonNull(instance, "instance");
        if (index < 0) {
            throw new IllegalArgumentException("lane index must be >= 0, was " + index);
        }
    }

    /** {@code <installationId>-<index>}, plus {@code -dlt} for dead letters: one fencing identity per outbox lane. */
    public String fencingKey() {
        return installationId + "-" + index + (deadLetter ? "-dlt" : "");
    }

    /** The lane that sends this lane's dead letters (its own producer, so the lane's batch is not disturbed). */
    public TransportLane forDeadLetters() {
        return deadLetter ? this : new TransportLane(name + "-dlt", index, installationId, outbox, instance, true);
    }
}
