-- 015: the home directory a remote machine's account sees: the random id kept in
-- $HOME/nni-experiments/.trialq-home, read at every connect. Machines with one home_id
-- share a home (an NFS home, or one host reached at two addresses): `nnictl experiment
-- machines` and GET /machines say so. NULL until the machine is first connected.
ALTER TABLE machine ADD COLUMN home_id TEXT;
