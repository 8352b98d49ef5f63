package io.txoutbox.testing.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ProcStatTest {

    @Test
    void fieldsAreCountedAfterACommandWithSpacesAndParentheses() {
        String line = "4242 (C2 Compiler) (x)) S 17 4242 4242 0 -1 4194560 1000 0 0 0 250 75 3 20 20 0 1 0 99887"
                + " 123456 789 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        ProcStat.Stat s = ProcStat.parse(line);
        assertThat(s).isEqualTo(new ProcStat.Stat('S', 17, 250, 75, 3, 20, 99887));
        assertThat(s.ticks()).isEqualTo(325);
        assertThat(s.ticksWithChildren()).isEqualTo(348);
        assertThat(ProcStat.comm(line)).isEqualTo("C2 Compiler) (x)");
    }

    @Test
    void aTruncatedLineIsRefusedWithItsFieldCount() {
        assertThatThrownBy(() -> ProcStat.parse("12 (postgres) S 1 2 3"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 52 fields, this one 6");
        assertThatThrownBy(() -> ProcStat.parse("garbage"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no ')'");
    }

    @Test
    void machineBusyIsTotalLessIdleAndIowait() {
        assertThat(ProcStat.parseMachine("cpu  100 10 40 800 50 0 0 0 0 0"))
                .isEqualTo(new ProcStat.Jiffies(150, 1000));
        assertThatThrownBy(() -> ProcStat.parseMachine("cpu0 1 2 3 4"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not the first line");
    }

    @Test
    void thisProcessIsReadAndAnEndedOneIsEmpty() {
        long self = ProcessHandle.current().pid();
        ProcStat.Stat s = ProcStat.read(self).orElseThrow();
        assertThat(s.state()).isIn('R', 'S');
        assertThat(s.ppid()).isEqualTo(ProcessHandle.current().parent().orElseThrow().pid());
        assertThat(ProcStat.processTicks(self)).isPositive();
        assertThat(ProcStat.read(Integer.MAX_VALUE)).isEmpty();
        assertThat(ProcStat.processTicks(Integer.MAX_VALUE)).isEqualTo(-1);
        ProcStat.Jiffies machine = ProcStat.machineJiffies();
        assertThat(machine.total()).isPositive().isGreaterThanOrEqualTo(machine.busy());
        assertThat(ProcStat.clockTicks()).isPositive();
    }
}
