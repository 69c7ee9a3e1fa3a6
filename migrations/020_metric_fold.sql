-- 020: the metric counts of 018 (exp_counter 'metrics:TYPE') and 019 (metric_count) are
-- no longer kept by a trigger on every metric insert (two more rows written in each
-- metric's commit: +62% CPU per ingested metric), but folded in later in batches: the
-- api folds every metric with an id above metric_fold.upto into both tables and moves
-- upto, in one transaction, every half second (schema/counters.c metric_fold). Metric ids
-- only grow (AUTOINCREMENT, migration 003), so "id > upto" is exactly what is not counted
-- yet; the readers add it (a few rows: what arrived since the last fold), so every
-- answer is exact whether or not a fold ran, and a kill -9 at any point loses nothing
-- (the counts and upto move in the same commit).
CREATE TABLE metric_fold (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    upto INTEGER NOT NULL   -- the highest metric id counted in exp_counter and metric_count
) STRICT;
-- every metric there now was counted by the triggers dropped here
INSERT INTO metric_fold (id, upto) VALUES (1, coalesce((SELECT max(id) FROM metric), 0));

DROP TRIGGER exp_counter_metric_insert;
DROP TRIGGER metric_count_insert;

-- The triggers that move counts when a metric or trial goes or changes move only what was
-- folded (id <= upto): a metric not folded yet is counted where it is when it is folded.
DROP TRIGGER metric_count_delete;
CREATE TRIGGER metric_count_delete AFTER DELETE ON metric
WHEN OLD.id <= (SELECT upto FROM metric_fold)
BEGIN
    UPDATE metric_count SET periodical = periodical - (OLD.type = 'PERIODICAL'), final = final - (OLD.type = 'FINAL')
        WHERE (experiment_id, block) IN
            (SELECT t.experiment_id, t.sequence >> 6 FROM trial t WHERE t.id = OLD.trial_id AND t.attempt = OLD.attempt);
END;

DROP TRIGGER metric_count_trial_update;
CREATE TRIGGER metric_count_trial_update AFTER UPDATE OF experiment_id, sequence, attempt ON trial
WHEN OLD.experiment_id IS NOT NEW.experiment_id OR OLD.sequence IS NOT NEW.sequence OR OLD.attempt IS NOT NEW.attempt
BEGIN
    UPDATE metric_count SET
        periodical = periodical - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt
                                   AND type = 'PERIODICAL' AND id <= (SELECT upto FROM metric_fold)),
        final = final - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt AND type = 'FINAL'
                         AND id <= (SELECT upto FROM metric_fold))
        WHERE experiment_id = OLD.experiment_id AND block = OLD.sequence >> 6;
    INSERT INTO metric_count (experiment_id, block, periodical, final)
        SELECT NEW.experiment_id, NEW.sequence >> 6, sum(type = 'PERIODICAL'), sum(type = 'FINAL')
        FROM metric WHERE trial_id = NEW.id AND attempt = NEW.attempt AND id <= (SELECT upto FROM metric_fold)
        HAVING count(*) > 0
        ON CONFLICT DO UPDATE SET periodical = periodical + excluded.periodical, final = final + excluded.final;
END;

DROP TRIGGER metric_count_trial_insert;
CREATE TRIGGER metric_count_trial_insert AFTER INSERT ON trial
WHEN EXISTS (SELECT 1 FROM metric WHERE trial_id = NEW.id AND id <= (SELECT upto FROM metric_fold))
BEGIN
    INSERT INTO metric_count (experiment_id, block, periodical, final)
        SELECT NEW.experiment_id, NEW.sequence >> 6, sum(type = 'PERIODICAL'), sum(type = 'FINAL')
        FROM metric WHERE trial_id = NEW.id AND attempt = NEW.attempt AND id <= (SELECT upto FROM metric_fold)
        HAVING count(*) > 0
        ON CONFLICT DO UPDATE SET periodical = periodical + excluded.periodical, final = final + excluded.final;
END;

DROP TRIGGER metric_count_trial_delete;
CREATE TRIGGER metric_count_trial_delete BEFORE DELETE ON trial BEGIN
    UPDATE metric_count SET
        periodical = periodical - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt
                                   AND type = 'PERIODICAL' AND id <= (SELECT upto FROM metric_fold)),
        final = final - (SELECT count(*) FROM metric WHERE trial_id = OLD.id AND attempt = OLD.attempt AND type = 'FINAL'
                         AND id <= (SELECT upto FROM metric_fold))
        WHERE experiment_id = OLD.experiment_id AND block = OLD.sequence >> 6;
END;
