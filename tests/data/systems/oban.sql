-- oban's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TYPE {s}.oban_job_state AS ENUM ('available', 'scheduled', 'executing', 'retryable', 'completed', 'discarded', 'cancelled');
CREATE TABLE {s}.oban_jobs (
id bigserial PRIMARY KEY, state {s}.oban_job_state NOT NULL DEFAULT 'available', queue text NOT NULL DEFAULT 'default',
worker text NOT NULL, args jsonb NOT NULL DEFAULT '{}', errors jsonb[] NOT NULL DEFAULT ARRAY[]::jsonb[],
attempt integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL DEFAULT 20,
inserted_at timestamp without time zone NOT NULL DEFAULT timezone('UTC', now()),
scheduled_at timestamp without time zone NOT NULL DEFAULT timezone('UTC', now()),
attempted_at timestamp without time zone, completed_at timestamp without time zone, attempted_by text[],
discarded_at timestamp without time zone, priority integer NOT NULL DEFAULT 0, tags text[] DEFAULT ARRAY[]::text[],
meta jsonb DEFAULT '{}', cancelled_at timestamp without time zone,
CONSTRAINT attempt_range CHECK (attempt >= 0 AND attempt <= max_attempts),
CONSTRAINT positive_max_attempts CHECK (max_attempts > 0),
CONSTRAINT queue_length CHECK (char_length(queue) > 0 AND char_length(queue) < 128),
CONSTRAINT worker_length CHECK (char_length(worker) > 0 AND char_length(worker) < 128));
