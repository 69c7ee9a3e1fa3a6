-- 004: the api refreshes its in-memory tuner history from the trials changed since its
-- last look, instead of reading every trial each time.
CREATE INDEX trial_updated ON trial(experiment_id, updated_at);
