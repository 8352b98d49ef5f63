package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Per-key order and parking hold for keys that are not text, and such a key never shares a group with a text key. */
@Tag("pg-version")
class InboxBinaryKeyOrderIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final Duration AWAIT = Duration.ofMinutes(2);

    @Test
    void a_parked_binary_key_holds_back_only_its_own_events_and_resumes_in_order() throws Exception {
        OutboxSchema schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        byte[] binary = {0x00, 0x2a};
        byte[] lookalike = "\\x002a".getBytes(StandardCharsets.UTF_8); // the binary key's text form, as a text key
        List<UUID> binaryIds = new ArrayList<>();
        List<UUID> textIds = new ArrayList<>();
        List<InboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            UUID b = UUID.randomUUID();
            UUID t = UUID.randomUUID();
            binaryIds.add(b);
            textIds.add(t);
            messages.add(InboxMessage.builder(b).key(binary).eventType("E").build());
            messages.add(InboxMessage.builder(t).key(lookalike).eventType("E").build());
        }
        Inbox inbox = Inbox.create(schema);
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, "c", messages)).isEqualTo(10);
            c.commit();
        }
        AtomicBoolean failHead = new AtomicBoolean(true);
        List<UUID> binaryOrder = Collections.synchronizedList(new ArrayList<>());
        List<UUID> textOrder = Collections.synchronizedList(new ArrayList<>());
        InboxAdmin admin = InboxAdmin.create(postgres.database().dataSource(), schema);
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer("c").lanes(1).pollInterval(Duration.ofMillis(50))
                .defaultHandler((conn, e) -> {
                    if (java.util.Arrays.equals(e.keyBytes(), binary)) {
                        if (e.eventId().equals(binaryIds.get(0)) && failHead.get()) {
                            throw new OutboxException("rule violated by " + e.eventId()); // permanent: parks the key
                        }
                        binaryOrder.add(e.eventId());
                    } else {
                        assertThat(e.keyBytes()).isEqualTo(lookalike);
                        textOrder.add(e.eventId());
                    }
                }).build().start()) {
            await().atMost(AWAIT).until(() -> textOrder.size() == 5
                    && !admin.list(EventFilter.parked().consumer("c"), 0, 10).isEmpty());
            assertThat(textOrder).as("the text key is not held back by the parked binary key").isEqualTo(textIds);
            assertThat(binaryOrder).isEmpty();
            FailedEvent parked = admin.list(EventFilter.parked().consumer("c"), 0, 10).get(0);
            assertThat(parked.key()).isEqualTo("\\x002a");
            assertThat(parked.waiting()).isEqualTo(4);
            failHead.set(false);
            assertThat(admin.requeue("c", binaryIds.get(0), null)).isTrue();
            worker.nudge();
            await().atMost(AWAIT).until(() -> binaryOrder.size() == 5);
            assertThat(binaryOrder).as("in order after the release").isEqualTo(binaryIds);
        }
    }
}
