package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

import io.txoutbox.internal.Defects;
import io.txoutbox.internal.Defects.Defect;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.engine.discovery.MethodSelector;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * The suites notice each defect a refactoring could bring in silently: with the defect switched on
 * ({@link Defects}), the scenarios that guard against it run again in this JVM and at least one fails. The same
 * scenarios pass in the normal run of this build, so a failure here is the defect's.
 */
class InjectedDefectsIT {

    static Stream<Arguments> defects() {
        return Stream.of(
                Arguments.of(Defect.FLOOR_PASSES_WRITER, List.of(
                        selectMethod(ClaimFloorRelayIT.class,
                                "a_row_of_a_writer_open_while_later_ids_are_published_goes_out_promptly_once_it_commits"))),
                Arguments.of(Defect.MARK_ON_NEW_CONNECTION, List.of(
                        selectMethod(LaneSessionInvariantsIT.class,
                                "a_zombie_lane_cannot_mark_its_delivered_batch_and_the_next_owner_delivers_it_again"))),
                Arguments.of(Defect.SECOND_BATCH_IN_FLIGHT, List.of(
                        selectMethod(LaneSessionInvariantsIT.class,
                                "one_batch_in_flight_per_lane_also_after_a_send_timeout"))),
                Arguments.of(Defect.PER_ROW_BACKOFF, List.of(
                        selectMethod(PollingRelayInMemoryIT.class,
                                "a_record_failed_in_the_middle_of_a_batch_holds_back_only_its_key_and_keeps_its_order"))),
                Arguments.of(Defect.CLAIM_FORGETS_WAITING_KEY, List.of(
                        selectMethod(PollingRelayInMemoryIT.class,
                                "poison_parks_its_key_other_keys_flow_and_release_resumes_in_order"))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("defects")
    void the_suites_fail_on_the_injected_defect(Defect defect, List<MethodSelector> guards) throws Exception {
        TestExecutionSummary summary;
        try (AutoCloseable on = Defects.inject(defect)) {
            summary = run(guards);
        }
        assertThat(summary.getTestsFoundCount()).as("scenarios found").isEqualTo(guards.size());
        List<String> why = summary.getFailures().stream().map(f -> f.getTestIdentifier().getDisplayName() + ": "
                + f.getException().toString().lines().findFirst().orElse("")).toList();
        System.out.println("InjectedDefectsIT " + defect + ": " + why);
        assertThat(summary.getTestsFailedCount()).as("scenarios failed with %s on", defect).isPositive();
        // failed by what the defect breaks, not by the switch itself
        assertThat(why).noneMatch(w -> w.contains("the defect replaces"));
    }

    private static TestExecutionSummary run(List<MethodSelector> selectors) {
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(LauncherDiscoveryRequestBuilder.request().selectors(selectors).build(),
                listener);
        return listener.getSummary();
    }
}
