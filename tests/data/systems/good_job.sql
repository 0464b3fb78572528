-- good_job's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TABLE {s}.good_jobs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), queue_name text, priority integer, serialized_params jsonb, scheduled_at timestamp(6), performed_at timestamp(6),
finished_at timestamp(6), error text, created_at timestamp(6) NOT NULL, updated_at timestamp(6) NOT NULL, active_job_id uuid, concurrency_key text, cron_key text,
retried_good_job_id uuid, cron_at timestamp(6), batch_id uuid, batch_callback_id uuid, is_discrete boolean, executions_count integer, job_class text,
error_event smallint, labels text[], locked_by_id uuid, locked_at timestamp(6));
