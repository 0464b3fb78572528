-- pgmq's tables, reproduced from a current release's migrations (tests and scripts/bench-systems).
-- {s} is the schema, {q} the queue.
CREATE SCHEMA IF NOT EXISTS pgmq;
CREATE TABLE IF NOT EXISTS pgmq.meta (queue_name varchar UNIQUE NOT NULL, is_partitioned boolean NOT NULL, is_unlogged boolean NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
INSERT INTO pgmq.meta VALUES ('{q}', false, false) ON CONFLICT DO NOTHING;
CREATE TABLE pgmq."q_{q}" (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
CREATE TABLE pgmq."a_{q}" (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
