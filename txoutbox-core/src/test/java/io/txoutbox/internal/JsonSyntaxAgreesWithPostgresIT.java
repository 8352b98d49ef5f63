package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The client-side check must accept exactly what PostgreSQL's jsonb accepts (apart from the documented depth limit):
 * a hand-picked corpus of edge cases plus random mutations of valid documents, each sent to both.
 */
@Tag("pg-version")
class JsonSyntaxAgreesWithPostgresIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    @Test
    void accepts_exactly_what_jsonb_accepts() throws Exception {
        List<String> corpus = new ArrayList<>(List.of(
                "{}", "[]", "0", "-0", "1.5e10", "-1E-5", "\"\"", "true", "null", "{\"a\":[1,{\"b\":null}]}",
                "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800x\"",
                "1e131071", "1e131072", "0.5e131072", "0.5e131073", "1e-16383", "1e-16384", "0.0e-16383",
                "0e999999", "1.55e-16382", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "+1", "NaN", "\"\\x\"",
                "{\"a\":1}{", " [ ] ", "\t1\n", "\"tab\there\"", "{\"dup\":1,\"dup\":2}", "\"\\/\"", "1E+2",
                "-", "[-]", "\"\\u12G4\""));
        Random random = new Random(42);
        String[] seeds = {"{\"id\":\"o-1\",\"amount\":42.50,\"items\":[1,2,3],\"ok\":true}", "[\"a\",{\"b\":[null]}]"};
        String alphabet = "{}[]\",:.-+eE0123456789\\u tnrfalse";
        for (int i = 0; i < 400; i++) {
            StringBuilder s = new StringBuilder(seeds[i % 2]);
            int edits = 1 + random.nextInt(3);
            for (int e = 0; e < edits; e++) {
                int pos = random.nextInt(s.length() + 1);
                switch (random.nextInt(3)) {
                    case 0 -> s.insert(pos, alphabet.charAt(random.nextInt(alphabet.length())));
                    case 1 -> {
                        if (pos < s.length()) {
                            s.deleteCharAt(pos);
                        }
                    }
                    default -> {
                        if (pos < s.length()) {
                            s.setCharAt(pos, alphabet.charAt(random.nextInt(alphabet.length())));
                        }
                    }
                }
            }
            corpus.add(s.toString());
        }
        int disagreements = 0;
        List<String> examples = new ArrayList<>();
        int accepted = 0;
        try (Connection c = postgres.database().connect();
                PreparedStatement ps = c.prepareStatement("SELECT CAST(? AS jsonb)")) {
            for (String json : corpus) {
                boolean pg = true;
                try {
                    ps.setString(1, json);
                    ps.executeQuery().close();
                } catch (SQLException e) {
                    pg = false;
                }
                boolean ours = JsonSyntax.problem(json) == null;
                accepted += ours ? 1 : 0;
                if (pg != ours) {
                    disagreements++;
                    examples.add(json + " pg=" + pg + " ours=" + ours);
                }
            }
        }
        assertThat(examples).as("disagreements with PostgreSQL").isEmpty();
        assertThat(disagreements).isZero();
        assertThat(accepted).as("the corpus has both kinds").isBetween(20, corpus.size() - 20);
    }
}
