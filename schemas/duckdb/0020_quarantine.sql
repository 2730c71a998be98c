-- Records the schema contract (RUNSYNC_SCHEMA_CONTRACT) kept out of a frozen table: one row per
-- record, its latest version, with why. The record itself is in the raw archive; `runsync
-- quarantine replay` (or `runsync rebuild`) loads it from there once the contract lets it in, and
-- a later version that loads takes it out of here.
CREATE TABLE _sync_quarantine (
  resource VARCHAR NOT NULL,
  record_id VARCHAR,
  updated_at VARCHAR,
  quarantined_at TIMESTAMPTZ NOT NULL,
  reasons VARCHAR[] NOT NULL,
  -- MD5 of the payload kept out, as the raw archive holds it: the same payload fetched again is
  -- archived once, and a replay finds it by this.
  payload_hash VARCHAR NOT NULL
);
