package io.txoutbox.testing.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/**
 * A private embedded server crashes (immediate shutdown) and restarts on its data: what was committed is there, what
 * was open is gone, the connections of before are cut, and the server is back on the same port.
 */
class TestPostgresCrashIT {

    @Test
    void a_crash_keeps_what_committed_drops_what_was_open_and_the_restart_takes_the_same_port() throws Exception {
        try (TestPostgres pg = TestPostgres.startEmbedded()) {
            int port = pg.port();
            try (Connection c = pg.connect(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE crash_probe (id int PRIMARY KEY)");
                st.execute("INSERT INTO crash_probe VALUES (1)");
            }
            Connection open = pg.connect();
            open.setAutoCommit(false);
            try (Statement st = open.createStatement()) {
                st.execute("INSERT INTO crash_probe VALUES (2)");
            }

            pg.crash();
            assertThatThrownBy(() -> pg.connect()).isInstanceOf(SQLException.class);
            assertThatThrownBy(open::commit).as("the open transaction's connection is cut")
                    .isInstanceOf(SQLException.class);
            assertThatThrownBy(pg::crash).hasMessageContaining("not running");

            pg.restart();
            assertThat(pg.port()).isEqualTo(port);
            try (Connection c = pg.connect(); Statement st = c.createStatement();
                    var rs = st.executeQuery("SELECT array_agg(id ORDER BY id)::text FROM crash_probe")) {
                rs.next();
                assertThat(rs.getString(1)).isEqualTo("{1}");
            }
            assertThatThrownBy(pg::restart).hasMessageContaining("crash() it first");
        }
    }

    @Test
    void close_deletes_the_data_directory_and_a_closed_server_does_not_restart() throws Exception {
        TestPostgres pg = TestPostgres.startEmbedded();
        File data;
        try (Connection c = pg.connect(); Statement st = c.createStatement();
                var rs = st.executeQuery("SELECT current_setting('data_directory')")) {
            rs.next();
            data = new File(rs.getString(1));
        }
        assertThat(data).isDirectory();
        pg.close();
        assertThat(data).doesNotExist();
        assertThatThrownBy(pg::restart).hasMessageContaining("not closed");
    }
}
