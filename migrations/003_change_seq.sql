-- 003: cursors for incremental reads of the REST API (GET /trial-jobs?since=,
-- /metric-data?since=) and the indexes the history routes need at 100k trials.

-- One counter for every change of a trial row that a client can see. Writers are
-- serialized by SQLite, so the values a reader sees are always a prefix: a client that
-- read up to N never misses a change numbered <= N.
CREATE TABLE change_counter (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    value  INTEGER NOT NULL
) STRICT;

ALTER TABLE trial ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
UPDATE trial SET change_seq = rowid;
INSERT INTO change_counter(id, value) VALUES (1, (SELECT coalesce(max(rowid), 0) FROM trial));
CREATE INDEX trial_changes ON trial(experiment_id, change_seq);

CREATE TRIGGER trial_change_insert AFTER INSERT ON trial BEGIN
    UPDATE change_counter SET value = value + 1 WHERE id = 1;
    UPDATE trial SET change_seq = (SELECT value FROM change_counter WHERE id = 1) WHERE rowid = NEW.rowid;
END;

-- Only the columns the API shows: lease renewals and read offsets change nothing a
-- client sees and must not make every running trial "changed" every few seconds.
-- The trigger's own UPDATE touches change_seq only, so it does not fire itself.
CREATE TRIGGER trial_change_update
AFTER UPDATE OF status, sequence, parameter_id, parameter_source, parameters, attempt,
                kill_request, waiting_reason, trial_dir, start_time, end_time, exit_code,
                message, final_metric, final_metric_json, machine
ON trial BEGIN
    UPDATE change_counter SET value = value + 1 WHERE id = 1;
    UPDATE trial SET change_seq = (SELECT value FROM change_counter WHERE id = 1) WHERE rowid = NEW.rowid;
END;

-- metric ids become AUTOINCREMENT: an id is never handed out twice, even after the
-- newest rows were deleted with their experiment, so `id` itself is the metric cursor.
-- SQLite cannot change a primary key in place: copy, recreate, copy back (the views
-- that name `metric` stay valid because the name never disappears at a statement end
-- that checks them).
CREATE TEMP TABLE metric_copy AS SELECT * FROM metric;
DROP TABLE metric;
CREATE TABLE metric (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO metric(id, trial_id, attempt, parameter_id, type, sequence, value, default_value, time)
    SELECT id, trial_id, attempt, parameter_id, type, sequence, value, default_value, time
    FROM metric_copy ORDER BY id;
DROP TABLE metric_copy;

-- finalMetricData of every SUCCEEDED trial in a listing: one seek per trial.
CREATE INDEX metric_final ON metric(trial_id, attempt) WHERE type = 'FINAL';
