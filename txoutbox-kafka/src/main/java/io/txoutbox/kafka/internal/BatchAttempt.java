package io.txoutbox.kafka.internal;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * What the producer reported for the records of one transaction. Callbacks run on the producer's I/O thread; the
 * lane thread reads the state after commit or abort returned.
 *
 * <p>A failed record is a <em>culprit</em> when its error is seen here for the first time. The producer fails the
 * other records of an aborting transaction with the very same exception instance (its "last error"), or with an
 * abort notice; those are collateral, not culprits.
 */
final class BatchAttempt {

    private final RecordMetadata[] metadata;
    private final Exception[] errors;
    private final boolean[] culprit;
    /** The partition the producer reported with a failure (-1: none reported). */
    private final int[] failedPartition;
    private final Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    private volatile boolean failed;

    BatchAttempt(int size) {
        metadata = new RecordMetadata[size];
        errors = new Exception[size];
        culprit = new boolean[size];
        failedPartition = new int[size];
        java.util.Arrays.fill(failedPartition, -1);
    }

    Callback callback(int index) {
        return (md, error) -> completed(index, md, error);
    }

    private synchronized void completed(int index, RecordMetadata md, Exception error) {
        if (error == null) {
            metadata[index] = md;
            return;
        }
        errors[index] = error;
        if (md != null && md.partition() >= 0) {
            failedPartition[index] = md.partition();
        }
        failed = true;
        if (!Failures.isAbortNotice(error) && seen.add(error)) {
            culprit[index] = true;
        }
    }

    /** Some record failed already: sending more only adds to what must be aborted. */
    boolean failed() {
        return failed;
    }

    synchronized RecordMetadata metadata(int index) {
        return metadata[index];
    }

    /** The record's partition as the producer reported it, acknowledged or failed; -1 when unknown. */
    synchronized int partition(int index) {
        return metadata[index] != null ? metadata[index].partition() : failedPartition[index];
    }

    synchronized Exception error(int index) {
        return errors[index];
    }

    synchronized boolean isCulprit(int index) {
        return culprit[index];
    }

    synchronized boolean anyCulprit() {
        for (boolean c : culprit) {
            if (c) {
                return true;
            }
        }
        return false;
    }

    /** The first error reported to any record, for batch-level decisions (fencing). */
    synchronized Throwable anyError() {
        for (Exception e : errors) {
            if (e != null && !Failures.isAbortNotice(e)) {
                return e;
            }
        }
        for (Exception e : errors) {
            if (e != null) {
                return e;
            }
        }
        return null;
    }

    synchronized boolean anyFenced() {
        for (Exception e : errors) {
            if (e != null && Failures.isFenced(e)) {
                return true;
            }
        }
        return false;
    }
}
