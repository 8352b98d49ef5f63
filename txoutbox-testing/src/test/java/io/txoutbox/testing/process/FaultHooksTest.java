package io.txoutbox.testing.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class FaultHooksTest {

    @Test
    void formatAndParseRoundTrip() {
        List<FaultHooks.Hook> hooks = List.of(
                new FaultHooks.Hook("after-ack-before-mark", FaultHooks.Action.KILL, 1),
                new FaultHooks.Hook("before-commit", FaultHooks.Action.STOP, 7));

        String value = FaultHooks.format(hooks);

        assertThat(value).isEqualTo("after-ack-before-mark=kill,before-commit=stop@7");
        assertThat(FaultHooks.parse(value)).isEqualTo(hooks);
        assertThat(FaultHooks.parse(" ")).isEmpty();
    }

    @Test
    void badEntriesAreRejectedNamingTheEntry() {
        assertThatThrownBy(() -> FaultHooks.parse("x=explode")).hasMessageContaining("explode");
        assertThatThrownBy(() -> FaultHooks.parse("x=kill@zero")).hasMessageContaining("x=kill@zero");
        assertThatThrownBy(() -> FaultHooks.parse("nokind")).hasMessageContaining("nokind");
        assertThatThrownBy(() -> FaultHooks.parse("x=kill@0")).hasMessageContaining(">= 1");
        assertThatThrownBy(() -> new FaultHooks.Hook("has space", FaultHooks.Action.KILL, 1))
                .hasMessageContaining("has space");
    }

    @Test
    void linesAreRecognisedExactly() {
        String line = FaultHooks.line("h1", FaultHooks.Action.STOP, 42);

        assertThat(line).isEqualTo("TXOUTBOX-HOOK h1 stop pid=42");
        assertThat(FaultHooks.parseLine(line)).contains(new FaultHooks.Fired("h1", FaultHooks.Action.STOP, 42));
        assertThat(FaultHooks.isFiredLine(line, "h1")).isTrue();
        assertThat(FaultHooks.isFiredLine(line, "h")).isFalse();
        assertThat(FaultHooks.parseLine("TXOUTBOX-HOOK h1 explode pid=42")).isEmpty();
        assertThat(FaultHooks.parseLine("log: TXOUTBOX-HOOK h1 kill pid=42")).isEmpty();
    }

    @Test
    void processStateOfThisJvmIsRunningOrSleeping() {
        assertThat(FaultHooks.processState(ProcessHandle.current().pid())).hasValueSatisfying(
                s -> assertThat(s).isIn('R', 'S'));
        assertThat(FaultHooks.isStopped(ProcessHandle.current().pid())).isFalse();
        assertThat(FaultHooks.processState(Long.MAX_VALUE)).isEmpty();
    }
}
