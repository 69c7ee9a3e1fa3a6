-- 019: the number of metrics of each type per (experiment, block of 64 trial sequences),
-- counting only the metrics of each trial's current attempt (those the listings show),
-- kept by triggers in the transaction that inserts or deletes a metric or changes a
-- trial's attempt, sequence or experiment, so it is never out of step with the metrics (a
-- kill -9 loses both or neither). An offset into GET /metric-data (whose order is by trial
-- sequence, then metric id) sums these rows to the block that holds the offset and walks
-- at most that block's metrics, instead of walking `offset` metrics: a seek at any depth.
CREATE TABLE metric_count (
    experiment_id TEXT NOT NULL,
    block         INTEGER NOT NULL,  -- trial sequence >> 6
    periodical    INTEGER NOT NULL,
    final         INTEGER NOT NULL,
    PRIMARY KEY (experiment_id, block)
) STRICT, WITHOUT ROWID;

INSERT INTO metric_count (experiment_id, block, periodical, final)
    SELECT t.experiment_id, t.sequence >> 6, sum(m.type = 'PERIODICAL'), sum(m.type = 'FINAL')
    FROM trial t JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt GROUP BY 1, 2;

-- a metric of the trial's current attempt (a late one of an earlier attempt is not shown)
CREATE TRIGGER metric_count_insert AFTER INSERT ON metric BEGIN
    INSERT INTO metric_count (experiment_id, block, periodical, final)
        SELECT t.experiment_id, t.sequence >> 6, NEW.type = 'PERIODICAL', NEW.type = 'FINAL'
        FROM trial t WHERE t.id = NEW.trial_id AND t.attempt = NEW.attempt
        ON CONFLICT DO UPDATE SET periodical = periodical + excluded.periodical, final = final + excluded.final;
END;

-- a metric deleted alone (a trial's own go with it: metric_count_trial_delete below)
CREATE TRIGGER metric_count_delete AFTER DELETE ON metric BEGIN
    UPDATE metric_count SET periodical = periodical - (OLD.type = 'PERIODICAL'), final = final - (OLD.type = 'FINAL')
        WHERE (experiment_id, block) IN
            (SELECT t.experiment_id, t.sequence >> 6 FROM trial t WHERE t.id = OLD.trial_id AND t.attempt = OLD.attempt);
END;

-- a trial leaves its block with its current attempt's metrics, and comes into its new one
-- with the metrics of its new attempt (a retry: usually none yet)
CREATE TRIGGER metric_count_trial_update AFTER UPDATE OF experiment_id, sequence, attempt ON trial
WHEN OLD.experiment_id IS NOT NEW.experiment_id OR OLD.sequence IS NOT NEW.sequence OR OLD.attempt IS NOT NEW.attempt
BEGIN
    UPDATE metric_count SET
        periodical = periodical - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt
                                   AND type = 'PERIODICAL'),
        final = final - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt AND type = 'FINAL')
        WHERE experiment_id = OLD.experiment_id AND block = OLD.sequence >> 6;
    INSERT INTO metric_count (experiment_id, block, periodical, final)
        SELECT NEW.experiment_id, NEW.sequence >> 6, sum(type = 'PERIODICAL'), sum(type = 'FINAL')
        FROM metric WHERE trial_id = NEW.id AND attempt = NEW.attempt HAVING count(*) > 0
        ON CONFLICT DO UPDATE SET periodical = periodical + excluded.periodical, final = final + excluded.final;
END;

-- a trial inserted with metrics already there (none of trialq's writers does; a copy may)
CREATE TRIGGER metric_count_trial_insert AFTER INSERT ON trial
WHEN EXISTS (SELECT 1 FROM metric WHERE trial_id = NEW.id)
BEGIN
    INSERT INTO metric_count (experiment_id, block, periodical, final)
        SELECT NEW.experiment_id, NEW.sequence >> 6, sum(type = 'PERIODICAL'), sum(type = 'FINAL')
        FROM metric WHERE trial_id = NEW.id AND attempt = NEW.attempt HAVING count(*) > 0
        ON CONFLICT DO UPDATE SET periodical = periodical + excluded.periodical, final = final + excluded.final;
END;

-- before its metrics go by ON DELETE CASCADE (they go after the trial row, when the
-- metric trigger can no longer find their trial)
CREATE TRIGGER metric_count_trial_delete BEFORE DELETE ON trial BEGIN
    UPDATE metric_count SET
        periodical = periodical - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt
                                   AND type = 'PERIODICAL'),
        final = final - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt AND type = 'FINAL')
        WHERE experiment_id = OLD.experiment_id AND block = OLD.sequence >> 6;
END;

CREATE TRIGGER metric_count_experiment AFTER DELETE ON experiment BEGIN
    DELETE FROM metric_count WHERE experiment_id = OLD.id;
END;
