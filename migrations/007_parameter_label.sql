-- 007: the parameter id a trial sees on the wire when it is not the tuner index.
-- Hyperband and BOHB name their suggestions "<hb>-<s>_<round>_<counter>" and
-- "<s>_<round>_<counter>" (NNI's string parameter ids), and a customized advisor sends
-- ids of its own. NULL: the wire parameter_id is trial.parameter_id, as before.
-- parameter.cfg, the HTTP trial channel and the REST hyperParameters all show it.
ALTER TABLE trial ADD COLUMN parameter_label TEXT;
