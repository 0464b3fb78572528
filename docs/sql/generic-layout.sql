-- dlqctl's generic PostgreSQL layout (docs/postgres.md).
-- A dead-letter table, the queue table it redrives into, the consumer's dedupe table, and an
-- optional NOTIFY trigger that lets `dlqctl tail` wake up at once instead of polling.
-- Other column names are fine: map them in dlqctl.toml under [queues.NAME.columns].

CREATE TABLE IF NOT EXISTS dead_letters (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- row key (native id)
    message_id    text        NOT NULL,                 -- the producer's stable id
    queue         text        NOT NULL,                 -- the queue it failed on
    payload       jsonb,                                -- JSON bodies
    payload_bytes bytea,                                -- any other body, byte for byte
    headers       jsonb       NOT NULL DEFAULT '{}',    -- attributes / headers
    error         text,                                 -- why it failed, last attempt
    attempts      integer     NOT NULL DEFAULT 0,
    group_key     text,                                 -- ordering group / entity id
    enqueued_at   timestamptz NOT NULL DEFAULT now(),   -- first enqueue (original send)
    failed_at     timestamptz NOT NULL DEFAULT now(),   -- dead-letter time
    CHECK (payload IS NOT NULL OR payload_bytes IS NOT NULL)
);
CREATE INDEX IF NOT EXISTS dead_letters_queue_id ON dead_letters (queue, id);

CREATE TABLE IF NOT EXISTS queue_messages (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id    text        NOT NULL,
    queue         text        NOT NULL,
    payload       jsonb,
    payload_bytes bytea,
    headers       jsonb       NOT NULL DEFAULT '{}',
    group_key     text,
    attempts      integer     NOT NULL DEFAULT 0,
    enqueued_at   timestamptz NOT NULL DEFAULT now(),
    visible_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (payload IS NOT NULL OR payload_bytes IS NOT NULL)
);
CREATE INDEX IF NOT EXISTS queue_messages_queue_visible ON queue_messages (queue, visible_at);

-- The consumer's dedupe (inbox) table: the id recorded in the same transaction as the work.
CREATE TABLE IF NOT EXISTS processed_messages (
    message_id text        PRIMARY KEY,
    handled_at timestamptz NOT NULL DEFAULT now()
);

-- Optional: wake `dlqctl tail` on every new dead letter (rows are still read by key).
CREATE OR REPLACE FUNCTION dlqctl_notify_dead_letter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dlqctl_dead_letters', NEW.id::text);
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS dead_letters_notify ON dead_letters;
CREATE TRIGGER dead_letters_notify AFTER INSERT ON dead_letters
    FOR EACH ROW EXECUTE FUNCTION dlqctl_notify_dead_letter();
