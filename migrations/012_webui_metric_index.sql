-- 012: the web UI's reads at 100,000 trials (api/routes_webui.c): the best trial, the
-- trials that succeeded without a final metric, and the trial table sorted by the final
-- metric are each a seek and a short walk on this index instead of a scan of the trials.
CREATE INDEX trial_final_metric ON trial(experiment_id, final_metric, sequence);
