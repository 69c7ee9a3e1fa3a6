-- 002: stable views for people who inspect with sqlite3 (documented in docs/schema.md).

CREATE VIEW trials_v AS
SELECT t.experiment_id, t.id AS trial_id, t.sequence, t.status, t.platform, t.machine,
       t.attempt, t.parameters, t.final_metric, t.final_metric_json,
       t.submit_time, t.start_time, t.end_time,
       CASE WHEN t.start_time IS NOT NULL AND t.end_time IS NOT NULL
            THEN (t.end_time - t.start_time) / 1000.0 END AS duration_s,
       t.exit_code, t.message, t.waiting_reason, t.trial_dir
FROM trial t;

-- Best trials per experiment, ranked by the final metric in the direction the tuner
-- optimizes (config tuner.classArgs.optimize_mode; NNI's default for TPE is minimize).
CREATE VIEW best_trials_v AS
SELECT * FROM (
    SELECT v.*,
           ROW_NUMBER() OVER (
               PARTITION BY v.experiment_id
               ORDER BY CASE WHEN lower(coalesce(json_extract(e.config, '$.tuner.classArgs.optimize_mode'),
                                                 'minimize')) = 'maximize'
                             THEN -v.final_metric ELSE v.final_metric END) AS rank
    FROM trials_v v JOIN experiment e ON e.id = v.experiment_id
    WHERE v.status = 'SUCCEEDED' AND v.final_metric IS NOT NULL
);

CREATE VIEW metrics_v AS
SELECT t.experiment_id, m.trial_id, t.sequence AS trial_sequence, m.attempt, m.type,
       m.sequence, m.default_value, m.value, m.time
FROM metric m JOIN trial t ON t.id = m.trial_id;
