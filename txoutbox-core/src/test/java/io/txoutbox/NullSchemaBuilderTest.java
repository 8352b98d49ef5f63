package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.postgresql.ds.PGSimpleDataSource;

/** Every builder and factory that takes an {@link OutboxSchema} refuses {@code null} at the call, the same way. */
class NullSchemaBuilderTest {

    static Stream<Arguments> takersOfASchema() {
        return Stream.of(
                Arguments.of("outbox", (Consumer<OutboxSchema>) s -> Outbox.builder().schema(s)),
                Arguments.of("relay", (Consumer<OutboxSchema>) s -> PollingRelay.builder().schema(s)),
                Arguments.of("inboxWorker", (Consumer<OutboxSchema>) s -> InboxWorker.builder().schema(s)),
                Arguments.of("replay", (Consumer<OutboxSchema>) s -> OutboxReplay.builder().schema(s)),
                Arguments.of("retention", (Consumer<OutboxSchema>) s -> OutboxRetention.builder().schema(s)),
                Arguments.of("health", (Consumer<OutboxSchema>) s -> OutboxHealth.builder().schema(s)),
                Arguments.of("inbox", (Consumer<OutboxSchema>) Inbox::create),
                Arguments.of("outboxAdmin",
                        (Consumer<OutboxSchema>) s -> OutboxAdmin.create(new PGSimpleDataSource(), s)),
                Arguments.of("inboxAdmin",
                        (Consumer<OutboxSchema>) s -> InboxAdmin.create(new PGSimpleDataSource(), s)),
                Arguments.of("status",
                        (Consumer<OutboxSchema>) s -> OutboxStatus.backlog(new PGSimpleDataSource(), s)),
                Arguments.of("status",
                        (Consumer<OutboxSchema>) s -> OutboxStatus.shards(new PGSimpleDataSource(), s)),
                Arguments.of("status",
                        (Consumer<OutboxSchema>) s -> OutboxStatus.snapshot(new PGSimpleDataSource(), s)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("takersOfASchema")
    void a_null_schema_is_refused_at_the_call_naming_the_fix(String component, Consumer<OutboxSchema> call) {
        assertThatThrownBy(() -> call.accept(null)).isInstanceOf(InvalidConfigurationException.class)
                .hasMessage(component + ".schema must not be null: pass OutboxSchema.defaults() or "
                        + "OutboxSchema.builder()...build() (settings txoutbox.schema.*)");
    }
}
