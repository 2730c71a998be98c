-- Runs the API deleted, as runsync found them: one row per deletion, closed when the run comes
-- back. `runsync rebuild` applies the deletions still open to the tables it derives.
CREATE TABLE _sync_deletions (
  run_id VARCHAR NOT NULL,
  created_date DATE NOT NULL,
  deleted_at TIMESTAMPTZ NOT NULL,
  -- soft: the run's states were closed in runs_history; hard: they were removed.
  mode VARCHAR NOT NULL,
  restored_at TIMESTAMPTZ,
  PRIMARY KEY (run_id, deleted_at)
);

-- The completeness ledger's view, with the warehouse's side leaving out runs marked deleted: the
-- API no longer lists them, so a whole listing of their day agrees without them.
CREATE OR REPLACE VIEW sync_completeness AS
WITH warehouse AS (
  SELECT created_date AS day, count(*) AS runs,
    bit_xor(completeness_hash(id, epoch_us(updated_at))) AS checksum, max(fetched_at) AS last_fetched_at
  FROM runs WHERE deleted_at IS NULL GROUP BY created_date
), open_runs AS (
  SELECT CAST(timezone('UTC', created_at) AS DATE) AS day, count(*) AS runs FROM _sync_open_runs GROUP BY 1
), watermark AS (
  SELECT make_timestamptz(CAST(CAST(value AS VARCHAR) AS BIGINT)) AS since FROM _sync_state WHERE key = 'runs.watermark'
), days AS (
  SELECT coalesce(l.day, w.day) AS day, l.listed_runs, coalesce(w.runs, 0) AS warehouse_runs,
    l.listed_checksum, coalesce(w.checksum, 0) AS warehouse_checksum, l.listing_started_at, l.verified_at,
    l.listed_by, w.last_fetched_at
  FROM _sync_completeness l FULL JOIN warehouse w ON w.day = l.day
)
SELECT d.day, d.listed_runs, d.warehouse_runs, d.listed_checksum, d.warehouse_checksum,
  coalesce(o.runs, 0) AS open_runs, d.verified_at, d.listed_by,
  CASE
    WHEN d.listed_runs IS NULL AND d.day + INTERVAL 1 DAY > coalesce((SELECT since FROM watermark), now())
      THEN 'current'
    WHEN d.listed_runs IS NULL THEN 'unverified'
    WHEN d.listed_runs <> d.warehouse_runs THEN 'disagree'
    WHEN d.listed_checksum = d.warehouse_checksum THEN 'agree'
    WHEN d.last_fetched_at >= d.listing_started_at THEN 'changed'
    ELSE 'disagree'
  END AS state
FROM days d LEFT JOIN open_runs o ON o.day = d.day
WHERE coalesce(d.listed_runs, 0) > 0 OR d.warehouse_runs > 0;
