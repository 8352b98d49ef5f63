package io.txoutbox.kafka.internal;

import io.txoutbox.spi.SendResult;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionAbortedException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/** How a Kafka failure of one record maps to {@link SendResult.Kind}. */
final class Failures {

    private Failures() {
    }

    /**
     * PERMANENT for what will fail again until someone acts (too large, bad topic, not allowed, confirmed missing
     * topic); UNAVAILABLE for Kafka's retriable errors (timeouts, lost connections, no leader: the broker, not the
     * record); RETRIABLE for everything else — including errors this code does not know. A refused certificate or
     * password is UNAVAILABLE too: no event can get through until the client's settings change, so none of them may
     * use up attempts or be parked meanwhile.
     */
    static SendResult.Kind kindOf(Throwable error) {
        Throwable e = unwrap(error);
        if (e instanceof AuthenticationException) {
            return SendResult.Kind.UNAVAILABLE;
        }
        if (e instanceof RecordTooLargeException || e instanceof RecordBatchTooLargeException
                || e instanceof InvalidTopicException || e instanceof SerializationException
                || e instanceof TopicAuthorizationException || e instanceof InvalidRecordException
                || e instanceof MissingTopicException) {
            return SendResult.Kind.PERMANENT;
        }
        if (e instanceof org.apache.kafka.common.errors.RetriableException) {
            return SendResult.Kind.UNAVAILABLE;
        }
        return SendResult.Kind.RETRIABLE;
    }

    /**
     * Another producer with the same transactional.id took over. Transaction protocol 2 brokers report it first as
     * {@link InvalidProducerEpochException} on the produce or commit, then {@link ProducerFencedException}.
     */
    static boolean isFenced(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException) {
                return true;
            }
            if (e.getCause() == e) {
                break;
            }
        }
        return false;
    }

    /** Errors after which the producer cannot be used again (Kafka's "fatal" list). */
    static boolean isFatal(Throwable error) {
        Throwable e = unwrap(error);
        return isFenced(error) || e instanceof AuthenticationException || e instanceof ClusterAuthorizationException
                || e instanceof TransactionalIdAuthorizationException || e instanceof UnsupportedVersionException
                || e instanceof IllegalStateException;
    }

    /** The producer gave up waiting for the topic's metadata: missing topic or unreachable broker, to be told apart. */
    static boolean isMissingMetadata(Throwable error) {
        Throwable e = unwrap(error);
        return e instanceof UnknownTopicOrPartitionException
                || (e instanceof TimeoutException && e.getMessage() != null
                        && e.getMessage().contains("not present in metadata"));
    }

    /**
     * True for the errors the producer hands to records that were only failed because their transaction was being
     * aborted; they never name a culprit.
     */
    static boolean isAbortNotice(Throwable error) {
        return error instanceof TransactionAbortedException
                || (error.getClass() == KafkaException.class && error.getMessage() != null
                        && error.getMessage().startsWith("Failing batch since transaction was aborted"));
    }

    /** The producer wraps some errors in a plain KafkaException; classify by what is inside. */
    static Throwable unwrap(Throwable error) {
        Throwable e = error;
        while (e.getClass() == KafkaException.class && e.getCause() != null
                && e.getCause() != e) {
            e = e.getCause();
        }
        return e;
    }

    /** A topic that the broker, when asked, says does not exist. */
    static final class MissingTopicException extends UnknownTopicOrPartitionException {
        private static final long serialVersionUID = 1L;

        MissingTopicException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
