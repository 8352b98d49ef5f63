package io.txoutbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * docs/api.md lists every public type of the published modules (core, Kafka, test support, the Spring Boot starter),
 * nested ones included,
 * each once, and nothing else; and its count is the one the page states.
 */
class ApiPageTest {

    private static final Path PAGE = Path.of("..", "docs", "api.md");
    /** "- `Name` — ..." or "- `kafka.Name` — ..." lines of the page's lists. */
    private static final Pattern ENTRY = Pattern.compile("^- `([A-Za-z0-9_.]+)` — ");
    /** The packages of the published modules that are not internal. */
    private static final Set<String> PUBLISHED = Set.of("io.txoutbox", "io.txoutbox.spi", "io.txoutbox.jackson",
            "io.txoutbox.micrometer", "io.txoutbox.kafka", "io.txoutbox.test", "io.txoutbox.spring",
            "io.txoutbox.spring.autoconfigure", "io.txoutbox.spring.actuate");
    private static final Pattern STATED = Pattern.compile("\\*\\*(\\d+) public types\\*\\*");

    @Test
    void the_api_page_lists_exactly_the_public_types() throws Exception {
        Set<String> actual = new ClassFileImporter()
                // the main classes of each module only (txoutbox-test's own tests share its package)
                .withImportOption(location -> !location.contains("/test-classes/") && !location.contains("-tests.jar"))
                .importPackages("io.txoutbox").stream()
                .filter(c -> PUBLISHED.contains(c.getPackageName()))
                .filter(c -> !c.isAnonymousClass() && !c.isLocalClass() && publicAllTheWay(c))
                .map(ApiPageTest::pageName)
                .collect(Collectors.toCollection(TreeSet::new));
        String page = Files.readString(PAGE);
        Set<String> listed = new TreeSet<>();
        String section = null;
        for (String line : page.lines().toList()) {
            if (line.startsWith("## `")) {
                section = line.substring(4, line.indexOf('`', 4));
            }
            Matcher m = ENTRY.matcher(line);
            if (m.find() && section != null) {
                String qualified = section + "." + m.group(1);
                assertThat(listed.add(qualified)).as("listed twice: %s", qualified).isTrue();
            }
        }
        assertThat(listed).as("the types docs/api.md lists (left) against the public types (right)")
                .containsExactlyElementsOf(actual);
        Matcher stated = STATED.matcher(page);
        assertThat(stated.find()).as("the page states its count as **N public types**").isTrue();
        assertThat(Integer.parseInt(stated.group(1))).as("the count the page states").isEqualTo(actual.size());
    }

    private static boolean publicAllTheWay(JavaClass c) {
        for (JavaClass k = c; k != null; k = k.getEnclosingClass().orElse(null)) {
            if (!k.getModifiers().contains(JavaModifier.PUBLIC)) {
                return false;
            }
        }
        return true;
    }

    /** io.txoutbox.Outbox$Builder -> io.txoutbox.Outbox.Builder */
    private static String pageName(JavaClass c) {
        return c.getPackageName() + "." + c.getName().substring(c.getPackageName().length() + 1).replace('$', '.');
    }
}
