package io.txoutbox.internal;

import io.txoutbox.internal.pg.ReadCommitted;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Test-only switches that put a known defect into the relay, so a test can prove the suites notice it
 * ({@code InjectedDefectsIT}): each is a way a refactoring could silently break a guarantee. Off unless a test turns
 * one on in its own JVM with {@link #inject}; when off, each check is one read of a volatile int.
 */
public final class Defects {

    /** The defects, each named by what it breaks. */
    public enum Defect {
        /** The claim floor moves past the id of a writer whose transaction is still open (its row is missed). */
        FLOOR_PASSES_WRITER,
        /** The mark runs on a new connection instead of the lane's session (a zombie's mark would succeed). */
        MARK_ON_NEW_CONNECTION,
        /** A lane sends its next batch while the previous one is still unresolved after a send timeout. */
        SECOND_BATCH_IN_FLIGHT,
        /** A retriable failure delays only its row: the later events of its key go out before it. */
        PER_ROW_BACKOFF,
        /** The claim's exclusion forgets parked keys: the later events of a parked key go out. */
        CLAIM_FORGETS_WAITING_KEY
    }

    private static volatile int active;

    private Defects() {
    }

    public static boolean active(Defect defect) {
        return (active & (1 << defect.ordinal())) != 0;
    }

    /** Turns {@code defect} on until the returned handle is closed. */
    public static AutoCloseable inject(Defect defect) {
        synchronized (Defects.class) {
            active |= 1 << defect.ordinal();
        }
        return () -> {
            synchronized (Defects.class) {
                active &= ~(1 << defect.ordinal());
            }
        };
    }

    /** {@link Defect#MARK_ON_NEW_CONNECTION}: a session of its own for the mark, committed by the caller's work. */
    public static <T> T onNewConnection(DataSource dataSource, ReadCommitted.Work<T> work) throws SQLException {
        try (Connection other = dataSource.getConnection()) {
            other.setAutoCommit(false);
            T result = work.run(other);
            other.commit();
            return result;
        }
    }
}
