-- Parquet files that keep up with short passes: a busy day's partition is split into files by
-- spans of created time (src/export/spans.ts). A run's export mark carries its created time,
-- so only the file of its span is rewritten; a mark without one (made before) rewrites the day.
ALTER TABLE _sync_export_dirty ADD COLUMN created_at TIMESTAMPTZ;

-- The span each created_date partition was given when first written, kept so that the names of
-- its files never change under a reader.
CREATE TABLE _sync_export_layout (
  created_date DATE PRIMARY KEY,
  span_minutes INTEGER NOT NULL
);
