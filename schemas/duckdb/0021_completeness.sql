-- The completeness ledger. A day is the UTC day runs were created. When a listing by created time
-- covers a whole day (the live window, a step of the rolling reconciliation, a backfill without
-- filters, `runsync verify`), what it listed of that day is kept here: how many runs and an
-- order-independent checksum of their (id, updated_at). The warehouse's side is never stored: the
-- view sync_completeness computes it from `runs` whenever it is read, so a row lost by any means
-- shows at once.
CREATE TABLE _sync_completeness (
  day DATE PRIMARY KEY,
  listed_runs BIGINT NOT NULL,
  listed_checksum UBIGINT NOT NULL,
  listing_started_at TIMESTAMPTZ NOT NULL,
  verified_at TIMESTAMPTZ NOT NULL,
  listed_by VARCHAR NOT NULL
);

-- Summaries a listing has read of days it has not yet covered whole, written with the pages that
-- listed them. A day's rows leave once it is covered (into _sync_completeness) or once the listing
-- can no longer cover it.
CREATE TABLE _sync_listed (
  stream VARCHAR NOT NULL,
  id VARCHAR NOT NULL,
  created_us BIGINT NOT NULL,
  updated_us BIGINT,
  listed_at TIMESTAMPTZ NOT NULL
);

-- A run's part of a checksum: 64 bits of the MD5 of its id and updated_at (microseconds since the
-- epoch). MD5, unlike hash(), is the same in every DuckDB version, so a checksum kept today
-- compares with one computed after an upgrade.
CREATE MACRO completeness_hash(id, updated_us) AS md5_number_lower(id || ':' || coalesce(CAST(updated_us AS VARCHAR), ''));

-- One row per UTC created day that has runs on either side. state:
--   agree        the day's runs and checksum are the listing's
--   disagree     the warehouse holds other runs, or other versions, than the last whole listing
--   changed      same count, other checksum, and runs of the day were fetched since the listing
--                began: newer versions, which a listing sees on its next round
--   unverified   no listing has covered the day whole
--   current      not yet over for the live window (its end is past the watermark, or the
--                present before a first pass)
CREATE VIEW sync_completeness AS
WITH warehouse AS (
  SELECT created_date AS day, count(*) AS runs,
    bit_xor(completeness_hash(id, epoch_us(updated_at))) AS checksum, max(fetched_at) AS last_fetched_at
  FROM runs GROUP BY created_date
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

-- Days to look at: those that disagree, those never listed whole, and those of the rolling
-- reconciliation's horizon whose last whole listing is older than RUNSYNC_RECONCILE_EVERY (as the
-- last pass had it).
CREATE VIEW sync_completeness_issues AS
WITH expected AS (
  SELECT CAST(value->>'every' AS BIGINT) AS every_us, CAST(value->>'horizon' AS BIGINT) AS horizon_us
  FROM _sync_state WHERE key = 'completeness.expected'
)
SELECT c.*,
  CASE c.state
    WHEN 'disagree' THEN 'disagrees with its last whole listing'
    WHEN 'unverified' THEN 'never listed whole'
    ELSE 'last listed whole longer ago than RUNSYNC_RECONCILE_EVERY'
  END AS issue
FROM sync_completeness c
WHERE c.state IN ('disagree', 'unverified')
  OR (c.state IN ('agree', 'changed') AND EXISTS (
    SELECT 1 FROM expected e
    WHERE e.every_us IS NOT NULL
      AND c.day + INTERVAL 1 DAY > now() - to_microseconds(e.horizon_us)
      AND c.verified_at < now() - to_microseconds(e.every_us)));
