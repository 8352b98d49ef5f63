package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class JsonSyntaxTest {

    @ParameterizedTest
    @ValueSource(strings = {
        "{}", "[]", "0", "-0", "1.5e10", "-1E-5", "\"\"", "true", "false", "null", " { \"a\" : [1, 2, {\"b\": null}] } ",
        "\"\\u00e9\\n\\t\\\"\\\\\\/\"", "\"\\ud83d\\ude00\"", "\"😀\"", "[[[[[]]]]]", "{\"a\":{\"b\":{\"c\":[true,false]}}}",
        "1e131071", "1e-16383", "0e999999", "0.5e131072", "\"é ü 中文\"", "0e1073741822", "\"\\u00Af\""
    })
    void accepts_valid_json(String json) {
        assertThat(JsonSyntax.problem(json)).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "{'a':1}", "01", "1.", ".5", "+1", "1e", "--1", "tru", "nul",
        "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u0000\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "[1] [2]", "{\"a\" 1}", "NaN", "Infinity", "\"a\nb\"", "1e131072", "1e-16384", "0.0e-16383", "[1}", "{]",
        // found by JsonSyntaxFuzzIT: jsonb refuses them
        "\"\\u\u0660\u0660\u0664\u0661\"", "\"\\u\uff10\uff21\uff14\uff11\"", "0e1073741823", "-0.0e+1073741823",
        "0e-1073741823", "1e99999999999"
    })
    void rejects_invalid_json(String json) {
        assertThat(JsonSyntax.problem(json)).isNotNull();
    }

    @Test
    void rejects_nesting_deeper_than_the_limit_without_overflowing_the_stack() {
        String ok = "[".repeat(JsonSyntax.MAX_DEPTH) + "]".repeat(JsonSyntax.MAX_DEPTH);
        String deep = "[".repeat(JsonSyntax.MAX_DEPTH + 1) + "]".repeat(JsonSyntax.MAX_DEPTH + 1);
        String veryDeep = "[".repeat(1_000_000);
        assertThat(JsonSyntax.problem(ok)).isNull();
        assertThat(JsonSyntax.problem(deep)).contains("nesting deeper");
        assertThat(JsonSyntax.problem(veryDeep)).contains("nesting deeper");
    }

    @Test
    void names_the_position_of_the_problem() {
        assertThat(JsonSyntax.problem("{\"a\":1,}")).contains("at character 7");
    }
}
