-- 005: GPU scheduling. One machine row per host and platform is shared by every
-- experiment of the database (experiment_id NULL), so the GPU slots of a host are
-- counted across experiments.

-- The UNIQUE of 001 treats NULLs as distinct: this one does not, so a host cannot get
-- two rows (and two sets of slots) when two workers register it at the same time.
CREATE UNIQUE INDEX machine_identity
    ON machine(coalesce(experiment_id, ''), platform, host, coalesce(port, 0), coalesce(user, ''));

-- GPU inventory: what the last nvidia-smi run said, and when; a failed run keeps the
-- rows it had (their claims stay valid) and says why in gpu_error.
ALTER TABLE machine ADD COLUMN gpu_checked INTEGER;   -- time of the last collection attempt
ALTER TABLE machine ADD COLUMN gpu_error   TEXT;      -- why it failed; NULL when it worked

ALTER TABLE gpu ADD COLUMN name        TEXT;          -- product_name
ALTER TABLE gpu ADD COLUMN memory_util REAL;          -- percent, as nvidia-smi reports

-- A trial's claims are found (and released) by trial id.
CREATE INDEX gpu_claim_trial ON gpu_claim(trial_id);

-- For people: every GPU with the trials holding a share of it (one row per claim, or
-- one row with NULL trial columns for a GPU nobody holds).
CREATE VIEW gpus_v AS
SELECT m.host, m.platform, g.idx AS gpu, g.name, g.memory_total, g.memory_used,
       g.utilization, g.active_procs, g.updated_at,
       c.trial_id, t.experiment_id, t.status AS trial_status, c.share
FROM gpu g
JOIN machine m ON m.id = g.machine_id
LEFT JOIN gpu_claim c ON c.machine_id = g.machine_id AND c.gpu_idx = g.idx
LEFT JOIN trial t ON t.id = c.trial_id;
