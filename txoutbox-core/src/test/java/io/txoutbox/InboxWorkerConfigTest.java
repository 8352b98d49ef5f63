package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.internal.inbox.HandlerFailures;
import java.sql.SQLException;
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
