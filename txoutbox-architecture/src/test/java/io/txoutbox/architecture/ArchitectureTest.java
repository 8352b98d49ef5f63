package io.txoutbox.architecture;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static org.assertj.core.api.Assertions.assertThat;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module boundaries, enforced: what core may import, what the Kafka module may use of core's internals, that no
 * internal type leaks into the public API, and that nothing in a lane's path takes a connection but the lane loop
 * (a lane's fencing is its one session; see docs/architecture.md).
 */
class ArchitectureTest {

    /** Core's packages: the entry points, the SPI, the adapters and every internal package. */
    private static final String[] CORE = {"io.txoutbox", "io.txoutbox.spi..", "io.txoutbox.internal..",
            "io.txoutbox.jackson..", "io.txoutbox.micrometer.."};

    /**
     * Core internals the Kafka module uses today, and only these. Each is a rule the two modules must share (the
     * configuration checks, the builder of the configuration descriptors, the retry settings, the inbox's storing,
     * failure classification, key bytes, the grant hints); the list may only shrink, as they find a public or SPI
     * home.
     */
    private static final Set<String> CORE_INTERNALS_KAFKA_MAY_USE = Set.of(
            "io.txoutbox.internal.config.Checks",
            "io.txoutbox.internal.config.DescriptorBuilder",
            "io.txoutbox.internal.config.RetryDraft",
            "io.txoutbox.internal.inbox.DefaultInbox",
            "io.txoutbox.internal.inbox.HandlerFailures",
            "io.txoutbox.internal.inbox.InboxBytes",
            "io.txoutbox.internal.Privileges");

    /** The classes of a lane's path: everything they run is on the lane's one session. */
    private static final Set<String> LANE_PATH = Set.of(
            "io.txoutbox.internal.relay.Lane",
            "io.txoutbox.internal.relay.RelayBatch",
            "io.txoutbox.internal.relay.RelayMark",
            "io.txoutbox.internal.relay.DeadLetterSender",
            "io.txoutbox.internal.inbox.WorkerLane",
            "io.txoutbox.internal.inbox.InboxBatch");

    private static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.txoutbox");
    }

    @Test
    void core_imports_neither_kafka_nor_spring() {
        noClasses().that().resideInAnyPackage(CORE)
                .should().dependOnClassesThat().resideInAnyPackage("org.apache.kafka..", "org.springframework..")
                .check(classes);
    }

    @Test
    void core_does_not_use_the_kafka_module() {
        noClasses().that().resideInAnyPackage(CORE)
                .should().dependOnClassesThat().resideInAPackage("io.txoutbox.kafka..")
                .check(classes);
    }

    @Test
    void the_kafka_module_uses_only_the_listed_core_internals() {
        DescribedPredicate<JavaClass> listed = DescribedPredicate.describe("listed in CORE_INTERNALS_KAFKA_MAY_USE",
                c -> CORE_INTERNALS_KAFKA_MAY_USE.contains(topLevel(c).getName()));
        noClasses().that().resideInAPackage("io.txoutbox.kafka..")
                .should().dependOnClassesThat(resideInAPackage("io.txoutbox.internal..").and(not(listed)))
                .check(classes);
    }

    @Test
    void the_spring_boot_starter_uses_no_internal_of_core_or_the_kafka_module() {
        // the starter is an application of the public API: what it needs, users need too
        noClasses().that().resideInAPackage("io.txoutbox.spring..")
                .should().dependOnClassesThat().resideInAnyPackage("io.txoutbox.internal..",
                        "io.txoutbox.kafka.internal..")
                .check(classes);
    }

    @Test
    void core_and_the_kafka_module_do_not_use_the_starter() {
        noClasses().that().resideInAnyPackage(CORE).or().resideInAPackage("io.txoutbox.kafka..")
                .should().dependOnClassesThat().resideInAPackage("io.txoutbox.spring..")
                .check(classes);
    }

    @Test
    void every_listed_core_internal_is_still_used_by_the_kafka_module() {
        // the list shrinks with the code: an entry that no longer exists, or that no Kafka class uses, must go
        for (String name : CORE_INTERNALS_KAFKA_MAY_USE) {
            assertThat(classes.contain(name)).as("%s exists", name).isTrue();
            assertThat(classes.get(name).getDirectDependenciesToSelf())
                    .as("%s is used by the Kafka module", name)
                    .anyMatch(d -> d.getOriginClass().getPackageName().startsWith("io.txoutbox.kafka"));
        }
    }

    @Test
    void no_internal_type_in_a_public_signature() {
        codeUnits().that().areDeclaredInClassesThat(publicApi()).and(visibleToUsers())
                .should(new ArchCondition<>("not take, return or throw an internal type") {
                    @Override
                    public void check(JavaCodeUnit unit, ConditionEvents events) {
                        Stream.concat(Stream.concat(Stream.of(unit.getRawReturnType()),
                                                unit.getRawParameterTypes().stream()),
                                        unit.getThrowsClause().getTypes().stream())
                                .filter(ArchitectureTest::internal)
                                .forEach(t -> events.add(SimpleConditionEvent.violated(unit,
                                        unit.getFullName() + " exposes " + t.getName())));
                    }
                })
                .allowEmptyShould(false)
                .check(classes);
        fields().that().areDeclaredInClassesThat(publicApi()).and().arePublic()
                .should(new ArchCondition<>("not have an internal type") {
                    @Override
                    public void check(JavaField field, ConditionEvents events) {
                        if (internal(field.getRawType())) {
                            events.add(SimpleConditionEvent.violated(field,
                                    field.getFullName() + " exposes " + field.getRawType().getName()));
                        }
                    }
                })
                .allowEmptyShould(true)
                .check(classes);
        classes().that(publicApi())
                .should(new ArchCondition<>("not extend or implement an internal type") {
                    @Override
                    public void check(JavaClass c, ConditionEvents events) {
                        Stream.concat(c.getRawSuperclass().stream(), c.getRawInterfaces().stream())
                                .filter(ArchitectureTest::internal)
                                .forEach(t -> events.add(SimpleConditionEvent.violated(c,
                                        c.getName() + " extends " + t.getName())));
                    }
                })
                .check(classes);
    }

    @Test
    void only_the_lane_loop_takes_a_connection_in_a_lane_path() {
        noClasses().that(DescribedPredicate.describe("in a lane's path",
                        (JavaClass c) -> LANE_PATH.contains(topLevel(c).getName())
                                || c.getPackageName().equals("io.txoutbox.internal.progress")
                                || c.getPackageName().equals("io.txoutbox.internal.lane")
                                        && !topLevel(c).getSimpleName().equals("LaneLoop")))
                .should().callMethod(javax.sql.DataSource.class, "getConnection")
                .orShould().callMethodWhere(DescribedPredicate.describe("ReadCommitted opens a connection",
                        call -> call.getTargetOwner().getName().equals("io.txoutbox.internal.pg.ReadCommitted")
                                && Set.of("open", "transaction").contains(call.getName())))
                .check(classes);
    }

    /** Public types outside the internal packages of the published modules. */
    private static DescribedPredicate<JavaClass> publicApi() {
        return DescribedPredicate.describe("public API types", c -> c.getModifiers().contains(JavaModifier.PUBLIC)
                && !internal(c) && resideInAnyPackage(CORE).or(resideInAnyPackage("io.txoutbox.kafka..",
                        "io.txoutbox.test", "io.txoutbox.spring..")).test(c)
                && (c.getEnclosingClass().isEmpty()
                        || c.getEnclosingClass().get().getModifiers().contains(JavaModifier.PUBLIC)));
    }

    private static DescribedPredicate<JavaCodeUnit> visibleToUsers() {
        return DescribedPredicate.describe("public or protected", u -> u.getModifiers().contains(JavaModifier.PUBLIC)
                || u.getModifiers().contains(JavaModifier.PROTECTED));
    }

    private static boolean internal(JavaClass c) {
        JavaClass base = c.isArray() ? c.getBaseComponentType() : c;
        return base.getPackageName().contains(".internal");
    }

    private static JavaClass topLevel(JavaClass c) {
        JavaClass t = c;
        while (t.getEnclosingClass().isPresent()) {
            t = t.getEnclosingClass().get();
        }
        return t;
    }
}
