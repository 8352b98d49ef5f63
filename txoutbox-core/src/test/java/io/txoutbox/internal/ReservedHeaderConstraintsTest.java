package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The outbox table's reserved-header constraints (schema version 7) cover exactly the writer's reserved names. */
class ReservedHeaderConstraintsTest {

    @Test
    void one_constraint_per_reserved_name_and_one_for_other_cases_and_the_prefix_each_in_the_script() {
        String script = SchemaMigrator.load("V7__reserved_headers.sql");
        List<String> expected = new ArrayList<>();
        for (String name : MessageRules.RESERVED_HEADERS) {
            String constraint = "header_" + name + "_is_reserved";
            expected.add(constraint);
            assertThat(script).contains("ADD CONSTRAINT \"" + constraint + "\"\n    CHECK (state <> 'PENDING' OR"
                    + " last_error IS NOT NULL OR NOT headers ? '" + name + "') NOT VALID;");
            assertThat(script).containsPattern("\"\\^\\(([a-z_]+\\|)*" + name + "(\\|[a-z_]+)*\\)\\$\" flag");
        }
        expected.add("header_" + MessageRules.RESERVED_HEADER_PREFIX + "_or_other_case_is_reserved");
        assertThat(script).contains("|| @.key like_regex \"^" + MessageRules.RESERVED_HEADER_PREFIX + "\" flag \"i\"");
        assertThat(MessageRules.RESERVED_HEADER_CONSTRAINTS).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(MessageRules.RESERVED_HEADER_CONSTRAINTS).allSatisfy(c -> assertThat(c.length()).isLessThan(64));
        assertThat(SchemaMigrator.ONLINE_STEPS).containsKey(7);
        assertThat(SchemaMigrator.SCRIPTS).contains("V7__reserved_headers.sql");
    }
}
