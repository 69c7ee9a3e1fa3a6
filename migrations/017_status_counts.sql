-- 017: the number of trials per (experiment, status, block of 1024 sequences), kept by
-- triggers in the transaction that inserts, deletes or changes the status of a trial, so
-- it is never out of step with the trials (a kill -9 loses both or neither).
-- GET /job-statistics and the web UI's counts sum a few rows per 1024 trials instead of
-- counting every trial, and an offset within one status (GET /trial-jobs?status=..&offset=)
-- skips whole blocks by their counts and walks at most 1024 index entries.
CREATE TABLE trial_status_count (
    experiment_id TEXT NOT NULL,
    status        TEXT NOT NULL,
    block         INTEGER NOT NULL,  -- sequence >> 10
    n             INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, status, block)
) STRICT, WITHOUT ROWID;

INSERT INTO trial_status_count (experiment_id, status, block, n)
    SELECT experiment_id, status, sequence >> 10, count(*) FROM trial GROUP BY 1, 2, 3;

CREATE TRIGGER trial_status_count_insert AFTER INSERT ON trial BEGIN
    INSERT INTO trial_status_count (experiment_id, status, block, n)
        VALUES (NEW.experiment_id, NEW.status, NEW.sequence >> 10, 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER trial_status_count_delete AFTER DELETE ON trial BEGIN
    UPDATE trial_status_count SET n = n - 1
        WHERE experiment_id = OLD.experiment_id AND status = OLD.status AND block = OLD.sequence >> 10;
END;

CREATE TRIGGER trial_status_count_update AFTER UPDATE OF experiment_id, status, sequence ON trial
WHEN OLD.experiment_id IS NOT NEW.experiment_id OR OLD.status IS NOT NEW.status OR OLD.sequence IS NOT NEW.sequence
BEGIN
    UPDATE trial_status_count SET n = n - 1
        WHERE experiment_id = OLD.experiment_id AND status = OLD.status AND block = OLD.sequence >> 10;
    INSERT INTO trial_status_count (experiment_id, status, block, n)
        VALUES (NEW.experiment_id, NEW.status, NEW.sequence >> 10, 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;

-- the final metrics by status: the trials table sorted by the final metric NNI shows (a
-- SUCCEEDED trial's) is a walk of this index from its first entry, the SUCCEEDED trials
-- without a final metric are a seek to the NULLs, and the count with a metric is the
-- SUCCEEDED count (above) less those: no trial row read, no count of every trial
CREATE INDEX trial_status_metric ON trial(experiment_id, status, final_metric, sequence);

-- an experiment's counts go with it (its trials go by ON DELETE CASCADE)
CREATE TRIGGER trial_status_count_experiment AFTER DELETE ON experiment BEGIN
    DELETE FROM trial_status_count WHERE experiment_id = OLD.id;
END;
