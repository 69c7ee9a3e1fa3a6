-- 016: a trial's tracking URL on its platform (PAI-DLC: the console's page of the job),
-- shown as `url` in GET /trial-jobs, by `nnictl log trial` and in the web UI; NULL where
-- the platform has none. A change of it is a change a client sees (change_seq).
ALTER TABLE trial ADD COLUMN url TEXT;

DROP TRIGGER trial_change_update;
CREATE TRIGGER trial_change_update
AFTER UPDATE OF status, sequence, parameter_id, parameter_source, parameters, attempt,
                kill_request, waiting_reason, trial_dir, start_time, end_time, exit_code,
                message, final_metric, final_metric_json, machine, url
ON trial BEGIN
    UPDATE change_counter SET value = value + 1 WHERE id = 1;
    UPDATE trial SET change_seq = (SELECT value FROM change_counter WHERE id = 1) WHERE rowid = NEW.rowid;
END;
