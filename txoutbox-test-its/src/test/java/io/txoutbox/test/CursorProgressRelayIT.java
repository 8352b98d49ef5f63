package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.SendResult;
import java.sql.Connection;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The whole relay acceptance suite, and the in-memory transport's own scenarios, on tables with
 * {@code schema.progress=CURSOR} (docs/progress-models.md): the relay, the admin and the status readers take the
 * cursor model from the schema, and the suite counts published rows as that model records them.
 */
class CursorProgressRelayIT extends PollingRelayInMemoryIT {

    @Override
    protected OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }

    /**
     * The cursor model's way to put a row back by hand: with a {@code next_attempt_at} (due), as {@code OutboxAdmin}
     * does. A row put back without one below the cursor reads as published, and no claim looks there (the row-state
     * model's sweep has no equivalent: the cursor, not the row, says a happy-path row went out).
     */
    @Override
    @Test
    void a_dead_event_put_back_to_pending_below_the_claim_floor_is_found_by_the_sweep() throws Exception {
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE));
        Outbox outbox = outbox(relay);
        InMemoryTransport.Rule poisonFails = transport.failWhen(r -> r.eventType().equals("Poison"),
                SendResult.Kind.PERMANENT);
        UUID poisoned = write(outbox, message("k1", "Poison")).get(0);
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 1);
        for (int round = 0; round < 20; round++) { // the cursor moves past the dead row
            List<UUID> ids = write(outbox, message("k" + (round + 2), "E"));
            transport.awaitDelivered(ids.get(0), WAIT);
        }
        poisonFails.remove();
        try (Connection c = db().connect();
                var st = c.prepareStatement("UPDATE " + schema().qualifiedOutboxTable()
                        + " SET state = 'PENDING', next_attempt_at = now() WHERE event_id = ?")) {
            st.setObject(1, poisoned);
            assertThat(st.executeUpdate()).isEqualTo(1);
        }
        transport.awaitDelivered(poisoned, WAIT);
    }
}
