package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TestHooksTest {

    @Test
    void parses_names_actions_and_hit_counts() {
        assertThat(TestHooks.parse("after-ack-before-mark=kill@3, after-claim=stop")).hasSize(2);
        assertThat(TestHooks.parse(null)).isEmpty();
        assertThatThrownBy(() -> TestHooks.parse("x=explode")).hasMessageContaining("kill or stop");
        assertThatThrownBy(() -> TestHooks.parse("x")).hasMessageContaining("name=action");
    }

    @Test
    void a_hook_that_is_not_configured_does_nothing() {
        TestHooks.hit(TestHooks.AFTER_ACK_BEFORE_MARK); // no property in this JVM: must return
        assertThat(System.getProperty(TestHooks.PROPERTY)).isNull();
    }
}
