-- solid_queue's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TABLE {s}.solid_queue_jobs (id bigserial PRIMARY KEY, queue_name varchar NOT NULL, class_name varchar NOT NULL, arguments text, priority integer NOT NULL DEFAULT 0,
active_job_id varchar, scheduled_at timestamp(6), finished_at timestamp(6), concurrency_key varchar, created_at timestamp(6) NOT NULL, updated_at timestamp(6) NOT NULL);
CREATE TABLE {s}.solid_queue_failed_executions (id bigserial PRIMARY KEY, job_id bigint NOT NULL REFERENCES {s}.solid_queue_jobs (id) ON DELETE CASCADE, error text, created_at timestamp(6) NOT NULL);
CREATE UNIQUE INDEX ON {s}.solid_queue_failed_executions (job_id);
CREATE TABLE {s}.solid_queue_ready_executions (id bigserial PRIMARY KEY, job_id bigint NOT NULL REFERENCES {s}.solid_queue_jobs (id) ON DELETE CASCADE, queue_name varchar NOT NULL, priority integer NOT NULL DEFAULT 0, created_at timestamp(6) NOT NULL);
CREATE UNIQUE INDEX ON {s}.solid_queue_ready_executions (job_id);
