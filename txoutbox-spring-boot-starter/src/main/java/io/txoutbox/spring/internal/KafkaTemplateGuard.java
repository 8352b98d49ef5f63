package io.txoutbox.spring.internal;

import java.lang.reflect.Field;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Headers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.transaction.support.ResourceHolderSupport;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.ReflectionUtils;

/**
 * The opt-in guard against the dual write ({@code txoutbox.guard.kafka-template}): gives every {@link KafkaTemplate}
 * bean a producer interceptor whose {@code onSend} runs on the sending thread inside {@code KafkaTemplate.send}, after
 * the template picked its producer and before the record is handed to it. The send is flagged while a database
 * transaction is bound to the thread:
 * <ul>
 * <li>inside a {@code @Transactional} method or {@code TransactionTemplate} of a {@code DataSourceTransactionManager}
 * or {@code JpaTransactionManager} (including a transactional {@code KafkaTemplate} synchronized with it, and
 * {@code executeInTransaction} called there);</li>
 * <li>in that transaction's {@code afterCommit}/{@code afterCompletion} callbacks, where
 * {@code @TransactionalEventListener(phase = AFTER_COMMIT)} listeners run: Spring unbinds the transaction's resources
 * only after them.</li>
 * </ul>
 * A database transaction is an actual transaction ({@code isActualTransactionActive}) with a bound JDBC
 * {@link ConnectionHolder} whose connection is out of auto-commit, or a bound JPA {@code EntityManagerHolder} that
 * takes part in it. A Kafka-only transaction ({@code KafkaTransactionManager}, which binds only its producer, or
 * {@code executeInTransaction} outside a database transaction) and a send outside any transaction pass. An
 * {@code @Async} listener sends on another thread, which the guard cannot tell from any other send.
 *
 * <p>An interceptor the application set on the template keeps running after the guard's check.
 */
public final class KafkaTemplateGuard implements BeanPostProcessor {

    private static final Logger log = LoggerFactory.getLogger(KafkaTemplateGuard.class);

    /** What the guard does with a flagged send. */
    public enum Mode {
        OFF, WARN, FAIL;

        /** The mode {@code txoutbox.guard.kafka-template} sets; YAML 1.1 reads an unquoted {@code off} as false. */
        public static Mode of(TxoutboxSettings settings) {
            StarterSettings.Setting setting = StarterSettings.GUARD_KAFKA_TEMPLATE;
            if (settings.text(setting).trim().equalsIgnoreCase("false")) {
                return OFF;
            }
            return valueOf(setting.read(settings).toUpperCase(Locale.ROOT));
        }
    }

    private static final String SETTING = StarterSettings.GUARD_KAFKA_TEMPLATE.property();
    private static final String ENTITY_MANAGER_HOLDER = "org.springframework.orm.jpa.EntityManagerHolder";
    private static final String SYNCHRONIZATION_UTILS =
            "org.springframework.transaction.support.TransactionSynchronizationUtils";
    /** Frames that are not the application's: the JDK, Spring, Kafka, Micrometer, the guard itself. */
    private static final String[] FRAMEWORK = {"java.", "javax.", "jdk.", "sun.", "com.sun.", "org.springframework.",
        "org.apache.kafka.", "io.micrometer.", "org.slf4j.", "ch.qos.logback.", "org.apache.logging.",
        KafkaTemplateGuard.class.getName()};
    /** Call sites already logged in warn mode; bounded, so a generated call site cannot grow it without end. */
    private static final int MAX_SITES = 10_000;

    private final Mode mode;
    private final Set<String> warned = ConcurrentHashMap.newKeySet();

    public KafkaTemplateGuard(Mode mode) {
        this.mode = mode;
    }

    public Mode mode() {
        return mode;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (mode == Mode.OFF || !(bean instanceof KafkaTemplate<?, ?> template)) {
            return bean;
        }
        Field field = ReflectionUtils.findField(KafkaTemplate.class, "producerInterceptor", ProducerInterceptor.class);
        if (field == null) {
            log.warn("{}={}: not installed on the KafkaTemplate '{}': this spring-kafka version keeps no "
                    + "producerInterceptor to chain the application's own interceptor to", SETTING,
                    mode.name().toLowerCase(Locale.ROOT), beanName);
            return bean;
        }
        ReflectionUtils.makeAccessible(field);
        ProducerInterceptor<?, ?> existing = (ProducerInterceptor<?, ?>) ReflectionUtils.getField(field, template);
        if (existing instanceof Interceptor) {
            return bean;
        }
        ((KafkaTemplate) template).setProducerInterceptor(new Interceptor(this, existing));
        return bean;
    }

    /** Checks one send: throws in fail mode, logs once per call site in warn mode. */
    void check(ProducerRecord<?, ?> record) {
        if (mode == Mode.OFF || !databaseTransactionBound()) {
            return;
        }
        Site site = site();
        if (mode == Mode.FAIL) {
            throw new IllegalStateException(message(record, site) + " Nothing was sent (setting " + SETTING
                    + "=fail).");
        }
        String key = site.frame == null ? "?" : site.frame;
        if (warned.size() < MAX_SITES && warned.add(key)) {
            log.warn("{} Sent anyway; logged once per call site (setting {}=warn).", message(record, site), SETTING);
        }
    }

    /** An actual transaction with a database resource in it, also during its afterCommit/afterCompletion callbacks. */
    static boolean databaseTransactionBound() {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            return false;
        }
        for (Object holder : TransactionSynchronizationManager.getResourceMap().values()) {
            if (holder instanceof ConnectionHolder connection) {
                if (inTransaction(connection)) {
                    return true;
                }
            } else if (isEntityManagerHolder(holder) && ((ResourceHolderSupport) holder).isSynchronizedWithTransaction()) {
                return true;
            }
        }
        return false;
    }

    /** A connection of the transaction is out of auto-commit; one bound only for synchronization is not. */
    private static boolean inTransaction(ConnectionHolder holder) {
        try {
            return !holder.getConnection().getAutoCommit();
        } catch (SQLException | RuntimeException e) {
            return false; // released already (a synchronization-only holder after its completion)
        }
    }

    private static boolean isEntityManagerHolder(Object holder) {
        for (Class<?> c = holder.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals(ENTITY_MANAGER_HOLDER)) {
                return true;
            }
        }
        return false;
    }

    private static String message(ProducerRecord<?, ?> record, Site site) {
        String where = site.frame == null ? "" : ", at " + site.frame;
        String what = "KafkaTemplate send to topic '" + record.topic() + "'";
        if (site.afterCommit) {
            return what + " from the completion callbacks of a database transaction (afterCommit/afterCompletion, "
                    + "where a @TransactionalEventListener(phase = AFTER_COMMIT) listener runs)" + where + ": the "
                    + "transaction is over, so a crash or a failed send now loses the event for good. This is the dual "
                    + "write the "
                    + "outbox removes: publish the event with OutboxEventPublisher.publish(topic, key, event) inside "
                    + "the transaction instead, and the relay sends it after the commit (docs/spring-boot.md, "
                    + "\"Catching the dual write\").";
        }
        return what + " inside a database transaction" + where + ": Kafka gets the record even when the transaction "
                + "then rolls back, and a send that fails after the commit loses the event. This is the dual write "
                + "the outbox removes: publish the event with OutboxEventPublisher.publish(topic, key, event) in this "
                + "transaction instead, and the relay sends it after the commit (docs/spring-boot.md, \"Catching the "
                + "dual write\").";
    }

    private record Site(String frame, boolean afterCommit) {
    }

    /** The first application frame of the stack, and whether the send runs in a transaction's completion callbacks. */
    private static Site site() {
        return StackWalker.getInstance().walk(frames -> {
            String frame = null;
            boolean afterCommit = false;
            for (StackWalker.StackFrame f : (Iterable<StackWalker.StackFrame>) frames::iterator) {
                String type = f.getClassName();
                if (type.equals(SYNCHRONIZATION_UTILS) && (f.getMethodName().equals("invokeAfterCommit")
                        || f.getMethodName().equals("invokeAfterCompletion"))) {
                    afterCommit = true;
                    break;
                }
                if (frame == null && isApplication(type)) {
                    frame = f.toStackTraceElement().toString();
                }
            }
            return new Site(frame, afterCommit);
        });
    }

    private static boolean isApplication(String type) {
        if (type.contains("$$")) {
            return false; // CGLIB proxies and other generated classes
        }
        for (String prefix : FRAMEWORK) {
            if (type.startsWith(prefix)) {
                return false;
            }
        }
        return true;
    }

    /** The guard's check ahead of the application's own interceptor, if the template had one. */
    static final class Interceptor implements ProducerInterceptor<Object, Object> {
        private final KafkaTemplateGuard guard;
        private final ProducerInterceptor<Object, Object> next;

        @SuppressWarnings("unchecked")
        Interceptor(KafkaTemplateGuard guard, ProducerInterceptor<?, ?> next) {
            this.guard = guard;
            this.next = (ProducerInterceptor<Object, Object>) next;
        }

        @Override
        public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
            guard.check(record);
            return next == null ? record : next.onSend(record);
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            if (next != null) {
                next.onAcknowledgement(metadata, exception);
            }
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception, Headers headers) {
            if (next != null) {
                next.onAcknowledgement(metadata, exception, headers);
            }
        }

        @Override
        public void close() {
            if (next != null) {
                next.close();
            }
        }

        @Override
        public void configure(Map<String, ?> configs) {
            if (next != null) {
                next.configure(configs);
            }
        }
    }
}
