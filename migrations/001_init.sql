-- 001: the core tables. Times are epoch milliseconds unless a name says otherwise.

CREATE TABLE experiment (
    id                 TEXT PRIMARY KEY,
    name               TEXT,
    config             TEXT NOT NULL,             -- canonical config JSON (NNI v2 shape)
    search_space       TEXT NOT NULL DEFAULT '{}',
    platform           TEXT NOT NULL,             -- local, remote, ... or hybrid
    status             TEXT NOT NULL DEFAULT 'INITIALIZED'
        CHECK (status IN ('INITIALIZED','RUNNING','NO_MORE_TRIAL','TUNER_NO_MORE_TRIAL',
                          'DONE','STOPPING','STOPPED','ERROR','VIEWED')),
    desired_status     TEXT,                      -- 'STOPPED' once a stop was asked for
    exp_dir            TEXT NOT NULL,             -- <experimentWorkingDirectory>/<id>
    port               INTEGER,
    bind_address       TEXT NOT NULL DEFAULT '127.0.0.1',
    start_time         INTEGER NOT NULL,
    end_time           INTEGER,
    exec_duration_ms   INTEGER NOT NULL DEFAULT 0, -- time spent in running states
    max_trial_number   INTEGER,
    max_exec_seconds   INTEGER,
    max_trial_seconds  INTEGER,
    concurrency        INTEGER NOT NULL CHECK (concurrency > 0),
    seed               INTEGER NOT NULL,
    next_sequence      INTEGER NOT NULL DEFAULT 0,
    tuner_exhausted    INTEGER NOT NULL DEFAULT 0,
    errors             TEXT NOT NULL DEFAULT '[]', -- JSON array of messages
    token              TEXT NOT NULL,              -- secret for mutating routes
    api_pid            INTEGER,
    api_start          INTEGER,                    -- /proc start time of api_pid
    api_heartbeat      INTEGER,
    updated_at         INTEGER NOT NULL
) STRICT;

CREATE TABLE trial (
    id                TEXT PRIMARY KEY,            -- NNI-style 5-character id
    experiment_id     TEXT NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
    sequence          INTEGER NOT NULL,
    parameter_id      INTEGER,
    parameter_source  TEXT NOT NULL DEFAULT 'algorithm',
    parameters        TEXT NOT NULL,               -- the parameters object JSON
    status            TEXT NOT NULL DEFAULT 'WAITING'
        CHECK (status IN ('WAITING','RUNNING','SUCCEEDED','FAILED','USER_CANCELED',
                          'SYS_CANCELED','EARLY_STOPPED','UNKNOWN')),
    platform          TEXT NOT NULL,
    machine           TEXT,                        -- host the job runs on
    job_id            TEXT,                        -- platform job handle (local: supervisor pid:start)
    attempt           INTEGER NOT NULL DEFAULT 1,
    max_attempts      INTEGER NOT NULL DEFAULT 1,
    lease_owner       TEXT,                        -- host:pid:start of the worker holding it
    lease_expires     INTEGER,
    kill_request      TEXT                         -- status to end with when killed on purpose
        CHECK (kill_request IS NULL OR kill_request IN ('USER_CANCELED','EARLY_STOPPED','SYS_CANCELED')),
    waiting_reason    TEXT,
    gpu_indices       TEXT,
    trial_dir         TEXT,
    submit_time       INTEGER NOT NULL,
    start_time        INTEGER,
    end_time          INTEGER,
    exit_code         INTEGER,
    message           TEXT,
    final_metric      REAL,                        -- default key of the FINAL metric
    final_metric_json TEXT,                        -- the FINAL value as reported (JSON text)
    metrics_offset    INTEGER NOT NULL DEFAULT 0,  -- bytes of .nni/metrics already stored
    stdout_offset     INTEGER NOT NULL DEFAULT 0,  -- bytes of trial.stdout already scanned
    updated_at        INTEGER NOT NULL,
    UNIQUE (experiment_id, sequence)
) STRICT;
CREATE INDEX trial_queue ON trial(experiment_id, status, sequence);
CREATE INDEX trial_lease ON trial(lease_owner) WHERE lease_owner IS NOT NULL;

CREATE TABLE metric (
    id             INTEGER PRIMARY KEY,
    trial_id       TEXT NOT NULL REFERENCES trial(id) ON DELETE CASCADE,
    attempt        INTEGER NOT NULL DEFAULT 1,
    parameter_id   TEXT NOT NULL DEFAULT '',       -- '' when the trial sent null
    type           TEXT NOT NULL CHECK (type IN ('PERIODICAL','FINAL')),
    sequence       INTEGER NOT NULL,
    value          TEXT NOT NULL,                  -- JSON text of the reported value
    default_value  REAL,                           -- the number, or dict["default"]
    time           INTEGER NOT NULL,
    UNIQUE (trial_id, attempt, parameter_id, type, sequence)
) STRICT;

CREATE TABLE machine (
    id             INTEGER PRIMARY KEY,
    experiment_id  TEXT REFERENCES experiment(id) ON DELETE CASCADE,
    platform       TEXT NOT NULL,
    host           TEXT NOT NULL,
    port           INTEGER,
    user           TEXT,
    healthy        INTEGER NOT NULL DEFAULT 1,
    last_error     TEXT,
    last_seen      INTEGER,
    UNIQUE (experiment_id, platform, host, port, user)
) STRICT;

CREATE TABLE gpu (
    machine_id     INTEGER NOT NULL REFERENCES machine(id) ON DELETE CASCADE,
    idx            INTEGER NOT NULL,
    uuid           TEXT,
    memory_total   INTEGER,
    memory_used    INTEGER,
    utilization    REAL,
    active_procs   INTEGER NOT NULL DEFAULT 0,
    updated_at     INTEGER,
    PRIMARY KEY (machine_id, idx)
) STRICT;

CREATE TABLE gpu_claim (
    machine_id     INTEGER NOT NULL,
    gpu_idx        INTEGER NOT NULL,
    trial_id       TEXT NOT NULL REFERENCES trial(id) ON DELETE CASCADE,
    share          REAL NOT NULL DEFAULT 1.0,
    PRIMARY KEY (machine_id, gpu_idx, trial_id),
    FOREIGN KEY (machine_id, gpu_idx) REFERENCES gpu(machine_id, idx) ON DELETE CASCADE
) STRICT;

-- Processes trialq started (api, workers): who to stop, who died and why.
CREATE TABLE process (
    id             INTEGER PRIMARY KEY,
    experiment_id  TEXT REFERENCES experiment(id) ON DELETE CASCADE,
    role           TEXT NOT NULL,                  -- 'api', 'worker:local', ...
    host           TEXT NOT NULL,
    pid            INTEGER NOT NULL,
    pid_start      INTEGER NOT NULL,               -- /proc start time, guards pid reuse
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    exit_status    TEXT
) STRICT;
CREATE INDEX process_live ON process(experiment_id) WHERE ended_at IS NULL;

-- Append-only log of every state change.
CREATE TABLE event (
    id             INTEGER PRIMARY KEY,
    time           INTEGER NOT NULL,
    experiment_id  TEXT,
    trial_id       TEXT,
    entity         TEXT NOT NULL CHECK (entity IN ('experiment','trial','process','import')),
    from_state     TEXT,
    to_state       TEXT,
    actor          TEXT,                           -- role and pid that made the change
    reason         TEXT
) STRICT;
CREATE INDEX event_exp ON event(experiment_id, id);
CREATE INDEX event_trial ON event(trial_id) WHERE trial_id IS NOT NULL;
