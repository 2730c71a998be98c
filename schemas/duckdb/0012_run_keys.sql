-- Where each stored run lies: a 64-bit hash of its id and its created_date. Runs carry no index (a
-- unique index is held whole in memory and rewritten by every checkpoint, both growing with the
-- warehouse), so finding whether a batch's runs are stored meant reading every stored id, a cost
-- that grew with each batch of a first sync. This narrow table is read instead; the runs of the
-- days it names are then read by their zone maps. Every stored run has a row here; a row whose run
-- moved to another day, or whose hash another id shares, only names a day to look in, so the merge
-- adds rows and never needs to remove them. The hash is md5's, which no DuckDB version changes.
CREATE TABLE _sync_run_keys (
  id_hash UBIGINT NOT NULL,
  created_date DATE NOT NULL
);

INSERT INTO _sync_run_keys
SELECT DISTINCT ('0x' || left(md5(id), 16))::UBIGINT, created_date FROM runs WHERE id IS NOT NULL;
