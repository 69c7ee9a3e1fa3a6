-- 011: the URL prefix an experiment's api serves under (nnictl create --url_prefix):
-- '' for none, else '/seg[/seg...]' without a trailing slash.
ALTER TABLE experiment ADD COLUMN url_prefix TEXT NOT NULL DEFAULT '';
