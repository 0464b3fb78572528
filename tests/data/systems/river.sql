-- river's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema.
CREATE TYPE {s}.river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled');
CREATE TABLE {s}.river_migration (line text NOT NULL DEFAULT 'main', version bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (line, version));
INSERT INTO {s}.river_migration (version) VALUES (1), (2), (3), (4), (5), (6);
CREATE TABLE {s}.river_job (
id bigserial PRIMARY KEY, state {s}.river_job_state NOT NULL DEFAULT 'available', attempt smallint NOT NULL DEFAULT 0,
max_attempts smallint NOT NULL, attempted_at timestamptz, created_at timestamptz NOT NULL DEFAULT now(), finalized_at timestamptz,
scheduled_at timestamptz NOT NULL DEFAULT now(), priority smallint NOT NULL DEFAULT 1, args jsonb NOT NULL, attempted_by text[],
errors jsonb[], kind text NOT NULL, metadata jsonb NOT NULL DEFAULT '{}', queue text NOT NULL DEFAULT 'default',
tags varchar(255)[] NOT NULL DEFAULT '{}', unique_key bytea, unique_states bit(8),
CONSTRAINT finalized_or_finalized_at_null CHECK ((finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))),
CONSTRAINT max_attempts_is_positive CHECK (max_attempts > 0),
CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4));
CREATE UNIQUE INDEX river_job_unique_idx ON {s}.river_job (unique_key) WHERE unique_key IS NOT NULL AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled');
