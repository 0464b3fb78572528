-- The audit table of dlqctl (docs/audit.md): one row per run that changes something, inserted
-- before the run starts, completed when it ends. dlqctl does not create it. Point
-- `[audit] url` (and `table`, default dlqctl_audit) in dlqctl.toml at it; the role needs
-- INSERT and UPDATE on it.
CREATE TABLE dlqctl_audit (
    run          text PRIMARY KEY,          -- the run's id, as in the JSON Lines log
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz,               -- NULL: the run crashed (or is still running)
    os_user      text NOT NULL,
    host         text NOT NULL,
    version      text NOT NULL,             -- dlqctl's version
    command      text NOT NULL,             -- redrive, replay, purge, native-redrive, native-cancel
    argv         text[] NOT NULL,           -- the command line, secrets redacted
    source       text NOT NULL,
    targets      text[] NOT NULL,
    filter       text NOT NULL,
    reason       text,                      -- --reason
    exit_code    integer,
    counts       jsonb,                     -- the run's summary (moved, failed, held, …)
    error        text,
    ids          text[],                    -- the stable ids moved, up to 1,000
    ids_file     text,                      -- past 1,000: the file beside the log that lists them
    ids_complete boolean                    -- false: some moved in one SQL statement, unlisted
);
CREATE INDEX ON dlqctl_audit (started_at);
