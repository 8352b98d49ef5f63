package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.internal.inbox.HandlerFailures;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class InboxWorkerConfigTest {

    private static final DataSource DS = new PGSimpleDataSource();

    private static InboxWorker.Builder valid() {
        return InboxWorker.builder().dataSource(DS).consumer("billing").handler("T", (c, e) -> { });
    }

    @Test
    void bad_values_are_refused_naming_the_property() {
        assertThatThrownBy(() -> valid().lanes(0).build()).hasMessageContaining("inboxWorker.lanes")
                .hasMessageContaining("was 0");
        assertThatThrownBy(() -> valid().lanes(65).build()).hasMessageContaining("inboxWorker.lanes");
        assertThatThrownBy(() -> valid().batchSize(0).build()).hasMessageContaining("inboxWorker.batchSize");
        assertThatThrownBy(() -> valid().consumer(null).build()).hasMessageContaining("inboxWorker.consumer");
        assertThatThrownBy(() -> valid().consumer("a\nb").build()).hasMessageContaining("inboxWorker.consumer");
        assertThatThrownBy(() -> valid().dataSource(null).build()).hasMessageContaining("inboxWorker.dataSource");
        assertThatThrownBy(() -> InboxWorker.builder().dataSource(DS).consumer("c").build())
                .hasMessageContaining("at least one handler");
        assertThatThrownBy(() -> valid().name("a b").build()).hasMessageContaining("inboxWorker.name");
        assertThat(valid().build().config().lanes()).isEqualTo(InboxWorkerConfig.DEFAULT_LANES);
    }

    @Test
    void the_lease_and_the_handler_budget_are_validated_against_each_other() {
        InboxWorkerConfig defaults = valid().build().config();
        assertThat(defaults.leaseTimeout()).isEqualTo(RelayConfig.DEFAULT_LEASE_TIMEOUT)
                .isEqualTo(Duration.ofSeconds(10));
        assertThat(defaults.handlerTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThatThrownBy(() -> valid().leaseTimeout(Duration.ofMillis(999)).build())
                .hasMessageContaining("inboxWorker.leaseTimeout must be >= 1 s");
        assertThatThrownBy(() -> valid().leaseTimeout(null).build())
                .hasMessageContaining("inboxWorker.leaseTimeout");
        assertThatThrownBy(() -> valid().handlerTimeout(Duration.ZERO).build())
                .hasMessageContaining("inboxWorker.handlerTimeout must be > 0");
        // a handler idles in its batch's transaction for up to its budget: the lease must leave room to give up
        assertThatThrownBy(() -> valid().handlerTimeout(Duration.ofSeconds(30)).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("inboxWorker.handlerTimeout (PT30S) must be at most half of"
                        + " inboxWorker.leaseTimeout (PT10S)")
                .hasMessageContaining("raise leaseTimeout");
        assertThatThrownBy(() -> valid().leaseTimeout(Duration.ofSeconds(8)).build())
                .hasMessageContaining("inboxWorker.handlerTimeout (PT5S)");
        InboxWorkerConfig slow = valid().handlerTimeout(Duration.ofSeconds(30)).leaseTimeout(Duration.ofMinutes(1))
                .build().config();
        assertThat(slow.handlerTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(slow.toString()).contains("leaseTimeout=PT1M", "handlerTimeout=PT30S");
    }

    @Test
    void the_default_classifier_splits_permanent_from_transient_failures() {
        assertThat(HandlerFailures.isPermanent(new OutboxException("bad format"))).isTrue();
        assertThat(HandlerFailures.isPermanent(new OutboxException("lost", null, true))).isFalse();
        assertThat(HandlerFailures.isPermanent(new SQLException("unique", "23505"))).isTrue();
        assertThat(HandlerFailures.isPermanent(new SQLException("serialization", "40001"))).isFalse();
        assertThat(HandlerFailures.isPermanent(new OutboxException("wrapped", new SQLException("x", "40P01"))))
                .isFalse();
        assertThat(HandlerFailures.isPermanent(new IllegalStateException("anything else"))).isFalse();
    }
}
