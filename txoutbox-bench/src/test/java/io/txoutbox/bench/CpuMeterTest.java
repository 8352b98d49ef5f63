package io.txoutbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CpuMeterTest {

    @Test
    void threadNamesOfARunningBenchGoToTheirComponents() {
        assertThat(CpuRules.thread("txoutbox-relay-bench-steady-st1-1000-0")).isEqualTo(CpuRules.RELAY_LANES);
        assertThat(CpuRules.thread("txoutbox-kafka-bench-steady-st1-1000-3")).isEqualTo(CpuRules.RELAY_LANES);
        assertThat(CpuRules.thread("txoutbox-relay-bench-steady-st1-1000-2-lease")).isEqualTo(CpuRules.RELAY_HELPERS);
        assertThat(CpuRules.thread("txoutbox-relay-bench-steady-st1-1000-members")).isEqualTo(CpuRules.RELAY_HELPERS);
        assertThat(CpuRules.thread("kafka-producer-network-thread | txoutbox-kafka-bench-r1-0-1"))
                .isEqualTo(CpuRules.RELAY_PRODUCERS);
        assertThat(CpuRules.thread("kafka-producer-network-thread | bench-raw-r1_1"))
                .isEqualTo(CpuRules.OTHER_PRODUCERS);
        assertThat(CpuRules.thread("bench-writer-7")).isEqualTo(CpuRules.WRITERS);
        assertThat(CpuRules.thread("bench-reader-steady-st1-1000")).isEqualTo(CpuRules.CONSUMER);
        assertThat(CpuRules.thread("data-plane-kafka-request-handler-3")).isEqualTo(CpuRules.BROKER);
        assertThat(CpuRules.thread("kafka-log-cleaner-thread-0")).isEqualTo(CpuRules.BROKER);
        assertThat(CpuRules.thread("kafka-1-raft-io-thread")).isEqualTo(CpuRules.BROKER);
        assertThat(CpuRules.thread("kafka-admin-client-thread | adminclient-2")).isEqualTo(CpuRules.OTHER);
        assertThat(CpuRules.thread("main")).isEqualTo(CpuRules.OTHER);
    }

    @Test
    void jvmInternalThreadsAreFoundByTheirTruncatedLinuxNames() {
        assertThat(CpuRules.nativeThread("C2 CompilerThre")).isEqualTo(CpuRules.JIT);
        assertThat(CpuRules.nativeThread("C1 CompilerThre")).isEqualTo(CpuRules.JIT);
        assertThat(CpuRules.nativeThread("GC Thread#1")).isEqualTo(CpuRules.GC_VM);
        assertThat(CpuRules.nativeThread("G1 Conc#0")).isEqualTo(CpuRules.GC_VM);
        // Java threads are counted by ThreadMXBean, not twice
        assertThat(CpuRules.nativeThread("bench-writer-0")).isNull();
        assertThat(CpuRules.nativeThread("txoutbox-relay-")).isNull();
    }

    @Test
    void backendsGoByApplicationNameThenRoleThenType() {
        assertThat(CpuRules.backend("txoutbox-relay bench-st1-1000-0 x@h:1#1", BenchEnv.RELAY_ROLE, "client backend"))
                .isEqualTo(CpuRules.PG_RELAY_LANES);
        assertThat(CpuRules.backend("bench-relay", BenchEnv.RELAY_ROLE, "client backend"))
                .isEqualTo(CpuRules.PG_RELAY_OTHER);
        assertThat(CpuRules.backend(CpuRules.WRITER_APPLICATION, "postgres", "client backend"))
                .isEqualTo(CpuRules.PG_WRITERS);
        assertThat(CpuRules.backend("", "", "autovacuum worker")).isEqualTo(CpuRules.PG_BACKGROUND);
        assertThat(CpuRules.backend("PostgreSQL JDBC Driver", "postgres", "client backend"))
                .isEqualTo(CpuRules.PG_OTHER);
    }

    @Test
    void microsPerEventAndCores() {
        assertThat(CostReport.microsPerEvent(2_000_000_000L, 1_000)).isEqualTo(2_000.0);
        assertThat(CostReport.microsPerEvent(1_000, 0)).isNaN();
        assertThat(CostReport.cores(30_000_000_000L, 30)).isEqualTo(1.0);
    }

    @Test
    void relayTotalIsItsThreadsPlusItsBackendsAndSaturationIsNamed() {
        Map<String, Long> threads = new LinkedHashMap<>();
        threads.put(CpuRules.RELAY_LANES, 3_000_000_000L);
        threads.put(CpuRules.RELAY_PRODUCERS, 1_000_000_000L);
        threads.put(CpuRules.WRITERS, 5_000_000_000L);
        Map<String, Long> backends = Map.of(CpuRules.PG_RELAY_LANES, 2_000_000_000L, CpuRules.PG_WRITERS,
                6_000_000_000L);
        CpuMeter.Result cpu = new CpuMeter.Result(10, 2, "1 1 1", "2 2 2", 0.5, 20_000_000_000L, 4_000_000_000L,
                threads, backends, true, 0, 10, 0, 5, 0, 0);
        PgCost.Delta pg = new PgCost.Delta(true, 300, 200, 2_000_000, 10_000, 3_000_000, 6_000_000, 10_000, 10_000,
                9_000, 0, 0, Map.of(), Map.of());
        CostReport r = new CostReport(cpu, pg, 10_000, 100, 10_000, -1);
        assertThat(r.relayMicrosPerEvent()).isEqualTo(600.0);
        assertThat(r.eventsPerBatch()).isEqualTo(100.0);
        // 300 statements + one COMMIT for each of the 200 BEGINs, over 100 batches
        assertThat(r.roundTripsPerBatch()).isEqualTo(5.0);
        assertThat(r.relayWalPerEvent()).isEqualTo(200.0);
        assertThat(r.writerWalPerEvent()).isEqualTo(300.0);
        assertThat(r.deadPerEvent()).isEqualTo(1.0);
        // writers 0.5 + their sessions 0.6 + broker 0.4 cores > 2/3
        assertThat(r.saturation()).contains("load generator + broker used 1.50 cores");
        assertThat(r.plus(r).relayMicrosPerEvent()).isEqualTo(600.0);
    }

    @Test
    void theProgressTablesUpdatesAreTheRelaysDeadTuplesToo() {
        CpuMeter.Result cpu = new CpuMeter.Result(10, 2, "1 1 1", "2 2 2", 0.5, 20_000_000_000L, 4_000_000_000L,
                Map.of(), Map.of(), true, 0, 10, 0, 5, 0, 0);
        // the cursor model: no outbox row updated, 50 advances of the lanes' progress rows, 40 of them HOT
        PgCost.Delta pg = new PgCost.Delta(true, 300, 200, 2_000_000, 10_000, 3_000_000, 6_000_000, 10_000, 0, 0, 50,
                40, Map.of(), Map.of());
        CostReport r = new CostReport(cpu, pg, 10_000, 100, 10_000, -1);
        assertThat(r.deadPerEvent()).isEqualTo(0.005);
        assertThat(r.progressUpdates()).isEqualTo("0.50/batch (80% HOT)");
    }
}
