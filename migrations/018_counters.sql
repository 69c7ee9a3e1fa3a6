-- 018: the counts GET /metrics serves (Prometheus), kept so that a scrape reads a few
-- rows per experiment whatever the number of trials.
--
-- exp_counter: per experiment, named counts kept by triggers in the transaction that
-- inserts, deletes or changes a trial or inserts a metric, so they never disagree with
-- the rows, even after a kill -9, and whichever process (api, any worker) made the change:
--   'trials:STATUS'   trials now in that status (a gauge)
--   'waiting:REASON'  WAITING trials now, by the class of their waiting reason (below)
--   'started'         trials that went RUNNING (each attempt once), ever
--   'ended:STATUS'    trials that reached that final status, ever
--   'metrics:TYPE'    metric rows stored (PERIODICAL, FINAL), ever
-- The totals never go down (a deleted trial keeps them); an experiment's rows go with it.
CREATE TABLE exp_counter (
    experiment_id TEXT NOT NULL,
    name          TEXT NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, name)
) STRICT, WITHOUT ROWID;

-- worker_stat: what each worker reports of its loop, one row per (experiment, platform,
-- name), written every few seconds by the worker (a bounded cost, whatever it does):
--   'requests:OP', 'errors:OP'  calls to its platform (OP: submit, poll, list, kill) and
--                               those that failed, ever (each report adds what it counted)
--   'loop_lag_ms'               the most its loop ran late over the last report period
--   'report_ms'                 when it last reported (epoch ms)
CREATE TABLE worker_stat (
    experiment_id TEXT NOT NULL,
    platform      TEXT NOT NULL,
    name          TEXT NOT NULL,
    value         INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, platform, name)
) STRICT, WITHOUT ROWID;

-- The class of a WAITING trial's waiting reason: the class of the first rule (by prio)
-- whose LIKE pattern the reason matches; without one (no reason, or the queue's own
-- 'waiting for a worker to take it'), 'claimed' when a worker holds it (it is starting
-- it, or a full disk keeps it from that) and 'queued' when none took it yet.
CREATE TABLE waiting_class_rule (
    prio    INTEGER PRIMARY KEY,
    pattern TEXT NOT NULL,
    class   TEXT              -- NULL: by the lease, as without a reason
) STRICT;
INSERT INTO waiting_class_rule (prio, pattern, class) VALUES
    (1, 'waiting for a worker to take it', NULL),
    (2, 'needs % GPU%', 'gpu'),                    -- its GPUs are not free (queue/gpu.c)
    (3, 'not submitted yet%', 'submit_retry'),     -- the platform's service did not take it yet
    (4, '%', 'platform');                          -- any other reason of the platform: its queue, machines down

INSERT INTO exp_counter (experiment_id, name, n)
    SELECT experiment_id, 'trials:' || status, count(*) FROM trial GROUP BY 1, 2;
INSERT INTO exp_counter (experiment_id, name, n)
    SELECT experiment_id, 'waiting:' || coalesce((SELECT class FROM waiting_class_rule
                                                  WHERE t.waiting_reason LIKE pattern ORDER BY prio LIMIT 1),
                                                 iif(t.lease_owner IS NULL, 'queued', 'claimed')), count(*)
    FROM trial t WHERE status = 'WAITING' GROUP BY 1, 2;
INSERT INTO exp_counter (experiment_id, name, n)
    SELECT experiment_id, 'started', count(*) FROM trial WHERE start_time IS NOT NULL GROUP BY 1;
INSERT INTO exp_counter (experiment_id, name, n)
    SELECT experiment_id, 'ended:' || status, count(*) FROM trial
    WHERE status NOT IN ('WAITING', 'RUNNING', 'UNKNOWN') GROUP BY 1, 2;
INSERT INTO exp_counter (experiment_id, name, n)
    SELECT t.experiment_id, 'metrics:' || m.type, count(*) FROM metric m JOIN trial t ON t.id = m.trial_id
    GROUP BY 1, 2;

-- Each trigger adds 1 to the names a trial's new row counts in and takes 1 from those its
-- old row counted in; a name that does not change is left alone.
CREATE TRIGGER exp_counter_trial_insert AFTER INSERT ON trial BEGIN
    INSERT INTO exp_counter (experiment_id, name, n)
        SELECT NEW.experiment_id, name, 1 FROM (
            SELECT 'trials:' || NEW.status AS name
            UNION ALL SELECT 'waiting:' || coalesce((SELECT class FROM waiting_class_rule
                           WHERE NEW.waiting_reason LIKE pattern ORDER BY prio LIMIT 1), iif(NEW.lease_owner IS NULL, 'queued', 'claimed'))
                WHERE NEW.status = 'WAITING'
            -- a trial inserted with its history (an import, a load) counts as started and ended
            UNION ALL SELECT 'started' WHERE NEW.start_time IS NOT NULL
            UNION ALL SELECT 'ended:' || NEW.status WHERE NEW.status NOT IN ('WAITING', 'RUNNING', 'UNKNOWN'))
        WHERE true ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER exp_counter_trial_update AFTER UPDATE OF status, waiting_reason, lease_owner ON trial
WHEN OLD.status IS NOT NEW.status OR (NEW.status = 'WAITING' AND
     (OLD.waiting_reason IS NOT NEW.waiting_reason OR OLD.lease_owner IS NOT NEW.lease_owner))
BEGIN
    UPDATE exp_counter SET n = n - 1 WHERE experiment_id = OLD.experiment_id AND name IN (
        SELECT 'trials:' || OLD.status WHERE OLD.status IS NOT NEW.status
        UNION ALL SELECT 'waiting:' || coalesce((SELECT class FROM waiting_class_rule
                           WHERE OLD.waiting_reason LIKE pattern ORDER BY prio LIMIT 1), iif(OLD.lease_owner IS NULL, 'queued', 'claimed'))
            WHERE OLD.status = 'WAITING');
    INSERT INTO exp_counter (experiment_id, name, n)
        SELECT NEW.experiment_id, name, 1 FROM (
            SELECT 'trials:' || NEW.status AS name WHERE OLD.status IS NOT NEW.status
            UNION ALL SELECT 'waiting:' || coalesce((SELECT class FROM waiting_class_rule
                           WHERE NEW.waiting_reason LIKE pattern ORDER BY prio LIMIT 1), iif(NEW.lease_owner IS NULL, 'queued', 'claimed'))
                WHERE NEW.status = 'WAITING'
            UNION ALL SELECT 'started' WHERE NEW.status = 'RUNNING' AND OLD.status IS NOT 'RUNNING'
            UNION ALL SELECT 'ended:' || NEW.status
                WHERE NEW.status NOT IN ('WAITING', 'RUNNING', 'UNKNOWN')
                AND OLD.status IN ('WAITING', 'RUNNING', 'UNKNOWN'))
        WHERE true ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER exp_counter_trial_delete AFTER DELETE ON trial BEGIN
    UPDATE exp_counter SET n = n - 1 WHERE experiment_id = OLD.experiment_id AND name IN (
        SELECT 'trials:' || OLD.status
        UNION ALL SELECT 'waiting:' || coalesce((SELECT class FROM waiting_class_rule
                           WHERE OLD.waiting_reason LIKE pattern ORDER BY prio LIMIT 1), iif(OLD.lease_owner IS NULL, 'queued', 'claimed'))
            WHERE OLD.status = 'WAITING');
END;

-- a metric row (the UNIQUE key makes a re-read one no insert, so it counts once)
CREATE TRIGGER exp_counter_metric_insert AFTER INSERT ON metric BEGIN
    INSERT INTO exp_counter (experiment_id, name, n)
        SELECT t.experiment_id, 'metrics:' || NEW.type, 1 FROM trial t WHERE t.id = NEW.trial_id
        ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER exp_counter_experiment_delete AFTER DELETE ON experiment BEGIN
    DELETE FROM exp_counter WHERE experiment_id = OLD.id;
    DELETE FROM worker_stat WHERE experiment_id = OLD.id;
END;
