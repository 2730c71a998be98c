-- Sync bookkeeping. Written in the same transaction as the data it describes, so a crash leaves
-- both or neither. The sync engine may add columns or tables through later migrations.

-- Watermarks, cursors and other small named values.
CREATE TABLE _sync_state (
  key VARCHAR PRIMARY KEY,
  value JSON,
  updated_at TIMESTAMPTZ NOT NULL
);

-- One row per sync pass (or per part of one), with its counts.
CREATE TABLE _sync_audit (
  id VARCHAR PRIMARY KEY,
  kind VARCHAR NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  finished_at TIMESTAMPTZ,
  status VARCHAR,
  counts JSON,
  requests BIGINT,
  rate_limited BIGINT,
  errors JSON
);

-- Runs that have not settled yet and keep being checked.
CREATE TABLE _sync_open_runs (
  run_id VARCHAR PRIMARY KEY,
  created_at TIMESTAMPTZ,
  updated_at TIMESTAMPTZ,
  reason VARCHAR,
  last_checked_at TIMESTAMPTZ
);

-- Payloads refused by the flattening (a member of the wrong type, a timestamp that is not one,
-- a missing key), kept whole with the reason so nothing is lost. Secrets are masked first.
CREATE TABLE _sync_rejected (
  endpoint VARCHAR NOT NULL,
  record_id VARCHAR,
  fetched_at TIMESTAMPTZ NOT NULL,
  reason VARCHAR NOT NULL,
  payload VARCHAR
);

-- What changed since the last Parquet export: a created_date of the run tables, or a catalog
-- table (created_date null). The export rewrites exactly these and clears them.
CREATE TABLE _sync_export_dirty (
  table_name VARCHAR NOT NULL,
  created_date DATE
);
