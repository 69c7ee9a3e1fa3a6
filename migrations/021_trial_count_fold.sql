-- 021: the trial counts of 018 (exp_counter 'trials:STATUS', 'waiting:CLASS',
-- 'ended:STATUS') are no longer kept by triggers on every change of a trial's status,
-- waiting reason or lease (one more row, and a page of the write-ahead log, in each of
-- a trial's four or five commits: +20 % CPU per local trial), but refreshed by the api
-- every half second from what is kept anyway (schema/counters.c counters_refresh): the
-- statuses from trial_status_count (017), the final ones too (a final status never
-- changes and no trial is deleted alone, so "reached that final status, ever" is the
-- number in it now), and the classes of the WAITING trials (a few: the scheduler only
-- makes trials for free slots). Only 'started' (each attempt that went RUNNING, which no
-- other row remembers) keeps a trigger, on that one transition.
DROP TRIGGER exp_counter_trial_insert;
DROP TRIGGER exp_counter_trial_update;
DROP TRIGGER exp_counter_trial_delete;

-- a trial inserted with its history (an import, a load) counts as started
CREATE TRIGGER exp_counter_started_insert AFTER INSERT ON trial WHEN NEW.start_time IS NOT NULL BEGIN
    INSERT INTO exp_counter (experiment_id, name, n) VALUES (NEW.experiment_id, 'started', 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER exp_counter_started AFTER UPDATE OF status ON trial
WHEN NEW.status = 'RUNNING' AND OLD.status IS NOT 'RUNNING' BEGIN
    INSERT INTO exp_counter (experiment_id, name, n) VALUES (NEW.experiment_id, 'started', 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;
