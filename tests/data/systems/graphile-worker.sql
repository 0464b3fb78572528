-- graphile-worker's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TABLE {s}._private_job_queues (id serial PRIMARY KEY, queue_name text NOT NULL UNIQUE, locked_at timestamptz, locked_by text, is_available boolean NOT NULL DEFAULT true);
CREATE TABLE {s}._private_tasks (id serial PRIMARY KEY, identifier text NOT NULL UNIQUE);
CREATE TABLE {s}._private_jobs (
id bigserial PRIMARY KEY, job_queue_id integer REFERENCES {s}._private_job_queues (id), task_id integer NOT NULL REFERENCES {s}._private_tasks (id),
payload json NOT NULL DEFAULT '{}'::json, priority smallint NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
attempts smallint NOT NULL DEFAULT 0, max_attempts smallint NOT NULL DEFAULT 25, last_error text,
created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), key text UNIQUE,
locked_at timestamptz, locked_by text, revision integer NOT NULL DEFAULT 0, flags jsonb,
is_available boolean GENERATED ALWAYS AS (locked_at IS NULL AND attempts < max_attempts) STORED NOT NULL,
CONSTRAINT jobs_key_check CHECK (length(key) > 0 AND length(key) <= 512),
CONSTRAINT jobs_max_attempts_check CHECK (max_attempts >= 1));
CREATE FUNCTION {s}.reschedule_jobs(job_ids bigint[], run_at timestamptz DEFAULT NULL, priority integer DEFAULT NULL, attempts integer DEFAULT NULL, max_attempts integer DEFAULT NULL)
RETURNS SETOF {s}._private_jobs LANGUAGE sql AS $$
UPDATE {s}._private_jobs AS jobs SET run_at = coalesce(reschedule_jobs.run_at, jobs.run_at), priority = coalesce(reschedule_jobs.priority, jobs.priority),
attempts = coalesce(reschedule_jobs.attempts, jobs.attempts), max_attempts = coalesce(reschedule_jobs.max_attempts, jobs.max_attempts), updated_at = now()
WHERE id = ANY(job_ids) AND (locked_at IS NULL OR locked_at < now() - interval '4 hours') RETURNING *;
$$;
