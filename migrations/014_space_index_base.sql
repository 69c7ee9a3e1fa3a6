-- 014: the tuner index at which the current search space began (nnictl update
-- searchspace). A tuner whose index is a position in the space (GridSearch, Random's
-- finite spaces, Batch) starts again from 0 in a new space: suggestion i of the space
-- is trial parameter_id space_index_base + i. 0 until a search space update.
ALTER TABLE experiment ADD COLUMN space_index_base INTEGER NOT NULL DEFAULT 0;
