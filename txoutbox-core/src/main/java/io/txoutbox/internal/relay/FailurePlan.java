package io.txoutbox.internal.relay;

import io.txoutbox.internal.pg.EventState;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.util.ArrayList;
import java.util.List;

/**
 * What one batch's send results mean for its rows ({@link FailurePlanner}): the ids to mark published, and one failure
 * update per failed key — the column values of the failure UPDATE, in the arrays' order — plus the events to send to
 * the dead-letter topic. Counts for the relay's counters ride along, so the planner itself touches nothing.
 */
final class FailurePlan {

    /** An event that failed for good under DEAD_LETTER_AND_CONTINUE: dead, and sent to the dead-letter topic. */
    record DeadLetter(OutboxRecord record, SendResult.Failed failed) {
    }

    final List<Long> published;
    final List<Long> ids = new ArrayList<>();
    final List<String> errors = new ArrayList<>();
    final List<Long> delays = new ArrayList<>();
    final List<EventState> states = new ArrayList<>();
    final List<Integer> addAttempts = new ArrayList<>();
    final List<String> topics = new ArrayList<>();
    final List<DeadLetter> deadLetters = new ArrayList<>();
    /** Events delivered after an earlier event of their key failed: the transport broke its ordering contract. */
    int contractBreaks;
    long collateral;
    long unavailable;
    long failedAttempts;
    long parked;
    long dead;
    /** Nothing got through and the broker was unreachable: the lane pauses before its next try. */
    boolean outage;

    FailurePlan(int batchSize) {
        this.published = new ArrayList<>(batchSize);
    }

    void add(OutboxRecord r, String error, long delayMs, EventState state, int addAttempt) {
        ids.add(r.id());
        topics.add(r.topic());
        errors.add(error);
        delays.add(delayMs);
        states.add(state);
        addAttempts.add(addAttempt);
    }

    /**
     * The dead-letter send of {@code r} failed: it is not in the dead-letter topic, so it stays pending and is tried
     * again after {@code delayMs}; the attempt still counts.
     */
    void deadLetterFailed(OutboxRecord r, String error, long delayMs) {
        int i = ids.indexOf(r.id());
        errors.set(i, error);
        delays.set(i, delayMs);
        states.set(i, EventState.PENDING);
        addAttempts.set(i, 1);
        dead--;
    }

    /** The failure record of the plan's failed heads, as the progress model takes it. */
    ProgressModel.FailureUpdate update() {
        String[] names = new String[states.size()];
        for (int i = 0; i < names.length; i++) {
            names[i] = states.get(i).name();
        }
        return new ProgressModel.FailureUpdate(ids.toArray(new Long[0]), errors.toArray(new String[0]),
                delays.toArray(new Long[0]), names, addAttempts.toArray(new Integer[0]));
    }
}
