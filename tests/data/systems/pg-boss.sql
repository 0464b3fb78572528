-- pg-boss's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TYPE {s}.job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
CREATE TABLE {s}.job (id uuid NOT NULL DEFAULT gen_random_uuid(), name text NOT NULL, priority integer NOT NULL DEFAULT 0, data jsonb,
state {s}.job_state NOT NULL DEFAULT 'created', retry_limit integer NOT NULL DEFAULT 2, retry_count integer NOT NULL DEFAULT 0,
retry_delay integer NOT NULL DEFAULT 0, retry_backoff boolean NOT NULL DEFAULT false, start_after timestamptz NOT NULL DEFAULT now(),
started_on timestamptz, singleton_key text, singleton_on timestamp without time zone, expire_in interval NOT NULL DEFAULT interval '15 minutes',
created_on timestamptz NOT NULL DEFAULT now(), completed_on timestamptz, keep_until timestamptz NOT NULL DEFAULT now() + interval '14 days',
output jsonb, dead_letter text, policy text, PRIMARY KEY (name, id));
