package io.txoutbox.testing.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The embedded server is the major version the build asked for (the pg16/pg17/pg18 executions run this too). */
@Tag("pg-version")
class TestPostgresVersionIT {

    @Test
    void the_shared_server_runs_the_requested_major_version() throws Exception {
        String wanted = TestPostgres.embeddedVersion();
        try (Connection c = TestPostgres.shared().connect();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT current_setting('server_version_num')::int / 10000")) {
            rs.next();
            assertThat(Integer.toString(rs.getInt(1)))
                    .as("server major with %s=%s", TestPostgres.VERSION_PROPERTY,
                            System.getProperty(TestPostgres.VERSION_PROPERTY))
                    .isEqualTo(wanted);
        }
    }

    @Test
    void an_unsupported_version_is_refused_with_the_supported_ones() {
        String before = System.getProperty(TestPostgres.VERSION_PROPERTY);
        System.setProperty(TestPostgres.VERSION_PROPERTY, "14");
        try {
            assertThatThrownBy(TestPostgres::embeddedVersion)
                    .hasMessageContaining("[15, 16, 17, 18]").hasMessageContaining("'14'");
        } finally {
            if (before == null) {
                System.clearProperty(TestPostgres.VERSION_PROPERTY);
            } else {
                System.setProperty(TestPostgres.VERSION_PROPERTY, before);
            }
        }
    }
}
