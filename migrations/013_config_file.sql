-- 013: the YAML file the experiment was created from (an absolute path; NULL for
-- experiments created before, or loaded from another machine's path that is gone).
-- Shipping the code directory leaves it out: configs often live beside the trial code
-- and hold the passwords and tokens of the platforms.
ALTER TABLE experiment ADD COLUMN config_file TEXT;
