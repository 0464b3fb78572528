//! The eighth round's job-system families (issue 30), by members that no corpus case spells
//! out. In a file of its own: the other families' table is near the size limit.

use crate::classify::Kind;

/// The job systems' and broker frameworks' own taxonomies: a job name no worker handles, a worker
/// that crashed against one that was stopped, what the system put back itself, what it refused as
/// built, RabbitMQ's 406 by its text, declared non-retryable failures, ActiveJob's quoted cause.
pub(super) const EIGHTH_ROUND_JOBS: &[(&str, Kind)] = &[
    // A job name no worker handles: ambiguous, whatever a later rule reads in it.
    (
        "handler not found for task \"invoice:retry-timeout\"",
        Kind::Unclassified,
    ),
    (
        "dramatiq.errors.ActorNotFound: sync_invoice",
        Kind::Unclassified,
    ),
    (
        "Task of kind 'billing.tasks.retry_on_timeout' is not registered, please make sure it's imported.",
        Kind::Unclassified,
    ),
    (
        "AssertionError [ERR_ASSERTION]: Unsupported task 'send_receipt'",
        Kind::Unclassified,
    ),
    (
        "Error: Missing process handler for job type rebuild-index",
        Kind::Unclassified,
    ),
    (
        "System.InvalidOperationException: No handlers could be found for message type: Billing.Messages.RefundIssued",
        Kind::Unclassified,
    ),
    // A worker that crashed: ambiguous; one that was stopped: transient.
    (
        "billiard.exceptions.WorkerLostError: Worker exited prematurely: signal 11 (SIGSEGV) Job: 913.",
        Kind::Unclassified,
    ),
    (
        "billiard.exceptions.WorkerLostError: Worker exited prematurely: exitcode 70 Job: 913.",
        Kind::Unclassified,
    ),
    (
        "billiard.exceptions.WorkerLostError: Worker exited prematurely: signal 2 (SIGINT) Job: 913.",
        Kind::Transient,
    ),
    (
        "Work-horse terminated unexpectedly; waitpid returned 6 (signal 6); ",
        Kind::Unclassified,
    ),
    (
        "Work-horse terminated unexpectedly; waitpid returned 256; ",
        Kind::Unclassified,
    ),
    (
        "Resque::DirtyExit: Child process received unhandled signal pid 4410 SIGBUS (signal 7)",
        Kind::Unclassified,
    ),
    (
        "SolidQueue::Processes::ProcessExitError: Process pid=4410 received unhandled signal 6",
        Kind::Unclassified,
    ),
    (
        "Error: Unexpected exit code: 134 signal: null",
        Kind::Unclassified,
    ),
    (
        "Error: Unexpected exit code: null signal: SIGTERM",
        Kind::Transient,
    ),
    (
        "RequestId: 0c1d Error: Runtime exited with error: signal: segmentation fault\nRuntime.ExitError",
        Kind::Unclassified,
    ),
    // What the system, the broker or the ORM put back itself: transient.
    ("dramatiq.middleware.shutdown.Shutdown", Kind::Transient),
    ("WaitingError: bullmq:movedToWait", Kind::Transient),
    (
        "huey.exceptions.TaskLockedException: unable to set lock: nightly-export",
        Kind::Transient,
    ),
    (
        "celery.exceptions.Retry: Retry at 2026-12-06 04:00:00+00:00: ValueError('quota window closed')",
        Kind::Transient,
    ),
    (
        "org.springframework.amqp.rabbit.listener.exception.MessageRejectedWhileStoppingException: Message listener container was stopping when a message was received",
        Kind::Transient,
    ),
    (
        "amqp.exceptions.PreconditionFailed: (0, 0): (406) PRECONDITION_FAILED - consumer ack timed out on channel 2",
        Kind::Transient,
    ),
    (
        "amqp.exceptions.PreconditionFailed: Basic.ack: (406) PRECONDITION_FAILED - delivery acknowledgement on channel 3 timed out. Timeout value used: 900000 ms.",
        Kind::Transient,
    ),
    (
        "ActiveRecord::PreparedStatementCacheExpired: ERROR:  cached plan must not change result type",
        Kind::Transient,
    ),
    // ActiveJob's quoted cause decides, not the wrapper.
    (
        "ActiveJob::DeserializationError: Error while trying to deserialize arguments: could not obtain a connection from the pool within 5.000 seconds (waited 5.002 seconds); all pooled connections were in use",
        Kind::Transient,
    ),
    (
        "ActiveJob::DeserializationError: Error while trying to deserialize arguments: connection to server at \"10.1.0.4\", port 5432 failed: timeout expired",
        Kind::Transient,
    ),
    (
        "ActiveJob::DeserializationError: Error while trying to deserialize arguments: Couldn't find Invoice with 'id'=77",
        Kind::Permanent,
    ),
    // Refused as built, or declared not retryable: permanent.
    (
        "ActiveJob::SerializationError: Unsupported argument type: ActionDispatch::Http::UploadedFile",
        Kind::Permanent,
    ),
    (
        "amqp.exceptions.PreconditionFailed: Queue.declare: (406) PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'emails' in vhost '/': received 'quorum' but current is 'classic'",
        Kind::Permanent,
    ),
    (
        "io.temporal.failure.ApplicationFailure: message='iban rejected', type='InvalidIban', nonRetryable=true",
        Kind::Permanent,
    ),
    ("ThreadError: deadlock; recursive locking", Kind::Permanent),
    ("RestClient::NotFound: 404 Not Found", Kind::Permanent),
    (
        "UnrecoverableError: job stalled more than allowable limit",
        Kind::Transient,
    ),
    (
        "com.rabbitmq.client.ShutdownSignalException: channel error; protocol method: #method<channel.close>(reply-code=541, reply-text=INTERNAL_ERROR - Feature `transient_nonexcl_queues` is deprecated., class-id=50, method-id=10)",
        Kind::Permanent,
    ),
    (
        "{\"code\":\"TASK_PROCESS_SIGKILL_TIMEOUT\",\"type\":\"INTERNAL_ERROR\",\"message\":\"Process kill timeout\"}",
        Kind::Unclassified,
    ),
    (
        "trigger.dev internal error (RECURSIVE_WAIT_DEADLOCK)",
        Kind::Permanent,
    ),
    ("trigger.dev internal error (POD_EVICTED)", Kind::Transient),
    // The retries ran out, and the text does not say why.
    (
        "DeadLetterReason: MaxDeliveryCountExceeded. Message could not be consumed after 5 delivery attempts.",
        Kind::Unclassified,
    ),
];
