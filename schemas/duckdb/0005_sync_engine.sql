-- What the sync engine keeps beside the data, committed in the same transactions as the rows it
-- describes.

-- Runs whose detail could not be fetched when they were listed (retries exhausted, not found):
-- the listing moved past them, so they are kept here and fetched again at every pass until they
-- load. `listed_updated_at` is the summary's updated_at when it was last listed.
CREATE TABLE _sync_pending_runs (
  run_id VARCHAR PRIMARY KEY,
  listed_updated_at TIMESTAMPTZ,
  attempts INTEGER NOT NULL,
  first_failed_at TIMESTAMPTZ NOT NULL,
  last_failed_at TIMESTAMPTZ NOT NULL,
  last_error VARCHAR
);

-- The audit row of a pass grows what operators ask for: requests per endpoint, retries, and the
-- created-time window the pass read.
ALTER TABLE _sync_audit ADD COLUMN requests_by_endpoint JSON;
ALTER TABLE _sync_audit ADD COLUMN retries BIGINT;
ALTER TABLE _sync_audit ADD COLUMN window_from TIMESTAMPTZ;
ALTER TABLE _sync_audit ADD COLUMN window_to TIMESTAMPTZ;
