//! Issue 30: the built-in rules come from the ecosystems' own taxonomies of retryable errors,
//! each rule says which (`taxonomy`, `source`), and a family matches texts the corpus does not
//! spell out (the members of an exception family, every errno name, every parser's wording).

mod jobs;

use super::{Classifier, Kind};
use jobs::EIGHTH_ROUND_JOBS;

#[test]
fn every_builtin_rule_cites_its_taxonomy() {
    for r in Classifier::builtin().rules() {
        let t = r.taxonomy.as_deref().unwrap_or_default();
        let s = r.source.as_deref().unwrap_or_default();
        assert!(!t.trim().is_empty(), "rule {} names no taxonomy", r.name);
        assert!(s.starts_with("https://"), "rule {} cites no source", r.name);
    }
}

/// The operator case: a Kafka record whose JSON ends early is poison, whatever wrapper
/// Spring Kafka puts around it (`check --max-class permanent=0` must see it).
#[test]
fn a_kafka_json_eof_is_poison() {
    let c = Classifier::builtin();
    for text in [
        "com.fasterxml.jackson.core.io.JsonEOFException: Unexpected end-of-input: expected close marker for Object (start marker at [Source: (byte[])\"{\"orderId\":42\"; line: 1, column: 1])",
        "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method could not be invoked with the incoming message\nCaused by: org.springframework.messaging.converter.MessageConversionException: failed to resolve class name. Class not found [com.acme.Order]",
        "org.apache.kafka.common.errors.RecordDeserializationException: Error deserializing key/value for partition orders-3 at offset 1182. If needed, please seek past the record to continue consumption.",
    ] {
        let e = c.explain_text(text);
        assert_eq!(e.kind, Kind::Permanent, "{text}: {}", e.rule);
        assert!(e.taxonomy.is_some(), "{text}");
    }
}

/// One text per family member that no corpus case spells out: the family decides, not the text.
#[test]
fn families_decide_for_their_members() {
    let c = Classifier::builtin();
    for (text, kind) in [
        NETWORK,
        RETRYABLE_CODES,
        DATABASES,
        BAD_INPUT,
        NOT_JSON_AT_ALL,
        MORE_FAMILIES,
        THIRD_ROUND,
        FIFTH_ROUND,
        SEVENTH_ROUND,
        EIGHTH_ROUND_JOBS,
    ]
    .concat()
    {
        let e = c.explain_text(text);
        assert_eq!(e.kind, kind, "{text}: got {}", e.rule);
    }
}

/// Network failures: the errno and Winsock names, libcurl's table, proxies. Transient.
const NETWORK: &[(&str, Kind)] = &[
    // errno and Winsock names and numbers.
    (
        "Errno::EHOSTDOWN: Host is down - connect(2)",
        Kind::Transient,
    ),
    (
        "System.Net.Sockets.SocketException (10054): An existing connection was forcibly closed by the remote host.",
        Kind::Transient,
    ),
    (
        "ConnectionAbortedError: [WinError 10053] An established connection was aborted by the software in your host machine",
        Kind::Transient,
    ),
    (
        "dial tcp 10.0.0.7:5432: connect: cannot assign requested address",
        Kind::Transient,
    ),
    (
        "Custom { kind: ConnectionReset, error: \"peer went away\" }",
        Kind::Transient,
    ),
    // libcurl's table, as Guzzle prints it.
    (
        "cURL error 52: Empty reply from server (see https://curl.haxx.se/libcurl/c/libcurl-errors.html)",
        Kind::Transient,
    ),
    (
        "cURL error 56: OpenSSL SSL_read: Connection reset by peer, errno 104",
        Kind::Transient,
    ),
    // Proxies.
    (
        "upstream connect error or disconnect/reset before headers. reset reason: connection failure",
        Kind::Transient,
    ),
    ("no healthy upstream", Kind::Transient),
];

/// The services' own retryable codes: the AWS SDKs', Kafka's RetriableException subclasses.
const RETRYABLE_CODES: &[(&str, Kind)] = &[
    // AWS SDK retryable codes.
    (
        "An error occurred (InternalError) when calling the PutObject operation (reached max retries: 4): We encountered an internal error. Please try again.",
        Kind::Transient,
    ),
    (
        "botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: \"https://sqs.eu-west-1.amazonaws.com/\"",
        Kind::Transient,
    ),
    // Kafka RetriableException subclasses.
    (
        "org.apache.kafka.common.errors.NotEnoughReplicasException: Messages are rejected since there are fewer in-sync replicas than required.",
        Kind::Transient,
    ),
    (
        "org.apache.kafka.common.errors.CoordinatorLoadInProgressException: The coordinator is loading and hence can't process requests.",
        Kind::Transient,
    ),
];

/// The database hierarchies: Spring's and JDBC's transient and non-transient exceptions, Npgsql's
/// transient SQLSTATEs.
const DATABASES: &[(&str, Kind)] = &[
    // Spring and JDBC hierarchies.
    (
        "org.springframework.dao.TransientDataAccessResourceException: PreparedStatementCallback; SQL [update orders set state = ?]",
        Kind::Transient,
    ),
    (
        "java.sql.SQLRecoverableException: IO Error: Got minus one from a read call",
        Kind::Transient,
    ),
    (
        "org.springframework.dao.InvalidDataAccessApiUsageException: Parameter value [abc] did not match expected type [java.lang.Long]",
        Kind::Permanent,
    ),
    (
        "java.sql.SQLNonTransientException: Data truncation",
        Kind::Permanent,
    ),
    // Npgsql's transient SQLSTATEs.
    (
        "Npgsql.PostgresException (0x80004005): 55006: database \"orders\" is being accessed by other users",
        Kind::Transient,
    ),
];

/// Input no retry can fix: every parser's wording, the schema validators. Permanent.
const BAD_INPUT: &[(&str, Kind)] = &[
    // Parsers.
    (
        "SyntaxError: JSON.parse: expected ',' or '}' after property value in object at line 1 column 17 of the JSON data",
        Kind::Permanent,
    ),
    (
        "SyntaxError: JSON Parse error: Unterminated string",
        Kind::Permanent,
    ),
    (
        "SyntaxError: Expected double-quoted property name in JSON at position 17 (line 1 column 18)",
        Kind::Permanent,
    ),
    (
        "The JSON value could not be converted to System.Guid. Path: $.orderId | LineNumber: 0 | BytePositionInLine: 21.",
        Kind::Permanent,
    ),
    ("trailing characters at line 1 column 14", Kind::Permanent),
    // Validators.
    (
        "ZodError: [{\"code\": \"invalid_type\", \"expected\": \"string\", \"received\": \"undefined\", \"path\": [\"email\"], \"message\": \"Required\"}]",
        Kind::Permanent,
    ),
    (
        "\"quantity\" must be greater than or equal to 1",
        Kind::Permanent,
    ),
    ("Email can't be blank", Kind::Permanent),
];

/// Neither: a body that is no JSON at all.
const NOT_JSON_AT_ALL: &[(&str, Kind)] = &[
    // A first character that is no JSON value: an HTML page as often as not.
    (
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        Kind::Unclassified,
    ),
    (
        "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('<' (code 60)): expected a valid value",
        Kind::Unclassified,
    ),
];

/// Members of the families added later (condition names, reply codes, service codes, error
/// numbers) that no corpus case spells out.
const MORE_FAMILIES: &[(&str, Kind)] = &[
    (
        "psycopg.errors.CannotConnectNow: the database system is starting up",
        Kind::Transient,
    ),
    (
        "** (Postgrex.Error) FATAL 57P02 (crash_shutdown) terminating connection because of crash of another server process",
        Kind::Transient,
    ),
    (
        "System.Net.Sockets.SocketException (10055): An operation on a socket could not be performed because the system lacked sufficient buffer space or because a queue was full.",
        Kind::Transient,
    ),
    (
        "com.rabbitmq.client.ShutdownSignalException: connection error; protocol method: #method<connection.close>(reply-code=541, reply-text=INTERNAL_ERROR, class-id=0, method-id=0)",
        Kind::Transient,
    ),
    (
        "Azure.Messaging.ServiceBus.ServiceBusException: The session lock has expired on the MessageSession. (SessionLockLost)",
        Kind::Transient,
    ),
    (
        "MongoServerError: interrupted at shutdown (InterruptedAtShutdown)",
        Kind::Transient,
    ),
    (
        "Microsoft.Data.SqlClient.SqlException (0x80131904): Cannot process request. Too many operations in progress for subscription.\nError Number:49918,State:1,Class:16",
        Kind::Transient,
    ),
    ("ORA-12541: TNS:no listener", Kind::Transient),
    (
        "Error: fetch stock: Deadline expired before operation could complete",
        Kind::Transient,
    ),
    (
        "org.springframework.web.server.ResponseStatusException: 422 UNPROCESSABLE_ENTITY \"amount must be positive\"",
        Kind::Permanent,
    ),
    (
        "curl: (77) error setting certificate file: /etc/ssl/certs/ca.pem",
        Kind::Permanent,
    ),
    (
        "psycopg.errors.StringDataRightTruncation: value too long for type character varying(3)",
        Kind::Permanent,
    ),
    (
        "Bunny::AccessRefused: ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN",
        Kind::Permanent,
    ),
];

/// The third round (issue 30): members of the families the new rules encode that no corpus case
/// spells out: other Envoy flags and HAProxy termination states, other Sarama texts, other
/// Stripe libraries, other runtime fatal errors, other SQLite and SQL Server forms.
const THIRD_ROUND: &[(&str, Kind)] = &[
    (
        "[2026-12-05T10:00:00.000Z] \"GET /v1/x HTTP/1.1\" 503 UO 0 81 0 - \"-\" \"curl/8.5.0\" \"id\" \"svc:80\" \"-\"",
        Kind::Transient,
    ),
    (
        "haproxy[7]: 10.0.0.1:4000 [05/Dec/2026:10:00:00.000] fe be/s1 0/0/0/-1/30001 504 194 - - sH-- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"",
        Kind::Transient,
    ),
    (
        "kafka server: The coordinator is still loading offsets and cannot currently process requests",
        Kind::Transient,
    ),
    (
        "StripeRateLimitError: Too many requests hit the API too quickly.",
        Kind::Transient,
    ),
    (
        "com.stripe.exception.InvalidRequestException: No such price: 'price_123'; code: resource_missing",
        Kind::Permanent,
    ),
    (
        "fatal error: concurrent map read and map write",
        Kind::Permanent,
    ),
    (
        "sqlite3.OperationalError: database table is locked",
        Kind::Transient,
    ),
    (
        "Msg 8115, Level 16, State 2, Line 1 Arithmetic overflow error converting expression to data type int.",
        Kind::Permanent,
    ),
    ("States.Permissions", Kind::Permanent),
    (
        "java.lang.OutOfMemoryError: Java heap space",
        Kind::Unclassified,
    ),
];

/// The fifth round's families, by members the corpus does not spell out: WebExceptionStatus
/// texts, the AWS and Google client error codes, the older Azure SDKs' class names, SQLite's and
/// the PHP engine's messages, modules the deployed code lacks. Several name a `timeout` that is
/// not a timeout.
const FIFTH_ROUND: &[(&str, Kind)] = &[
    (
        "System.Net.WebSockets.WebSocketException (0x80004005): Unable to connect to the remote server",
        Kind::Transient,
    ),
    (
        "An error occurred (MissingParameter) when calling the SendMessage operation: The request must contain the parameter MessageBody.",
        Kind::Permanent,
    ),
    (
        "operation error Lambda: UpdateFunctionConfiguration, https response error StatusCode: 400, RequestID: 5b1c, InvalidParameterValueException: Timeout value of 1000 seconds exceeds the maximum",
        Kind::Permanent,
    ),
    (
        "googleapi: Error 400: Required parameter: timeoutMs, required",
        Kind::Permanent,
    ),
    (
        "azure.servicebus.exceptions.SessionLockLostError: The lock on the session has expired.",
        Kind::Transient,
    ),
    (
        "SQLSTATE[23000]: Integrity constraint violation: 19 NOT NULL constraint failed: jobs.timeout",
        Kind::Permanent,
    ),
    ("ErrorException: Undefined index: timeout", Kind::Permanent),
    (
        "System.Net.Mail.SmtpException: Transaction failed. The server response was: 5.7.1 Message rejected as spam",
        Kind::Permanent,
    ),
    (
        "SQLSTATE[HY000] [2002] SSL error: certificate verify failed",
        Kind::Permanent,
    ),
    (
        "ModuleNotFoundError: No module named 'timeout'",
        Kind::Unclassified,
    ),
];

/// The seventh round's families, by members the corpus does not spell out: Lambda's other 502
/// configuration errors, the SDKs' retried markers around a code no rule lists, PostgreSQL's
/// class 54, PHP's missing traits; and the members that must keep their class: PgBouncer's own
/// 08P01 errors stay transient, an undefined method stays permanent.
const SEVENTH_ROUND: &[(&str, Kind)] = &[
    (
        "software.amazon.awssdk.services.lambda.model.InvalidSecurityGroupIdException: The security group ID 'sg-0a1b' does not exist (Service: Lambda, Status Code: 502, Request ID: 3c2b)",
        Kind::Permanent,
    ),
    (
        "operation error Lambda: Invoke, https response error StatusCode: 502, RequestID: 9e8d, KMSNotFoundException: Lambda was unable to decrypt the environment variables because the KMS key was not found.",
        Kind::Permanent,
    ),
    (
        "An error occurred (InsufficientHostCapacity) when calling the AllocateHosts operation (reached max retries: 4): Insufficient capacity.",
        Kind::Transient,
    ),
    (
        "operation error ECS: RunTask, exceeded maximum number of attempts, 3, https response error StatusCode: 500, RequestID: 1a2b, api error ServerException: Service Unavailable",
        Kind::Transient,
    ),
    (
        "pymysql.err.OperationalError: (1153, \"Got a packet bigger than 'max_allowed_packet' bytes\")",
        Kind::Permanent,
    ),
    (
        "SQLSTATE[54001]: Statement too complex: 7 ERROR:  stack depth limit exceeded",
        Kind::Permanent,
    ),
    (
        "SQLSTATE[08P01]: <<Unknown error>>: 7 ERROR:  query_wait_timeout",
        Kind::Transient,
    ),
    (
        "Error: Trait \"App\\Models\\Concerns\\HasUuid\" not found",
        Kind::Unclassified,
    ),
    (
        "Error: Call to undefined method App\\Models\\Order::refundLines()",
        Kind::Permanent,
    ),
    (
        "azure.core.exceptions.ResourceNotFoundError: (ContainerNotFound) The specified container does not exist.",
        Kind::Unclassified,
    ),
    (
        "software.amazon.awssdk.services.ecs.model.EcsException: Unknown error (Service: Ecs, Status Code: 400, Request ID: 2b4d) (SDK Attempt Count: 4)",
        Kind::Transient,
    ),
    (
        "software.amazon.awssdk.services.ecs.model.EcsException: Unknown error (Service: Ecs, Status Code: 400, Request ID: 2b4d) (SDK Attempt Count: 1)",
        Kind::Permanent,
    ),
    (
        "InsufficientCapacityException: Insufficient capacity.\n    at de_InsufficientCapacityExceptionRes {\n  '$fault': 'server',\n  '$metadata': {\n    httpStatusCode: 400,\n    attempts: 3,\n    totalRetryDelay: 1843\n  }\n}",
        Kind::Transient,
    ),
    (
        "Amazon.Glue.Model.InternalServiceException: An internal service error occurred.",
        Kind::Transient,
    ),
];
