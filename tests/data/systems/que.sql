-- que's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TABLE {s}.que_jobs (priority smallint NOT NULL DEFAULT 100, run_at timestamptz NOT NULL DEFAULT now(), id bigserial PRIMARY KEY, job_class text NOT NULL,
error_count integer NOT NULL DEFAULT 0, last_error_message text, queue text NOT NULL DEFAULT 'default', last_error_backtrace text, finished_at timestamptz,
expired_at timestamptz, args jsonb NOT NULL DEFAULT '[]', data jsonb NOT NULL DEFAULT '{}', job_schema_version integer NOT NULL, kwargs jsonb NOT NULL DEFAULT '{}',
CONSTRAINT error_length CHECK (char_length(last_error_message) <= 500 AND char_length(last_error_backtrace) <= 10000),
CONSTRAINT job_class_length CHECK (char_length(job_class) <= 200), CONSTRAINT queue_length CHECK (char_length(queue) <= 100));
