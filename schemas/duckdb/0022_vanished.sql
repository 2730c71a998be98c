-- Stored runs missing from a whole listing of their created day (the days a listing covers for
-- the completeness ledger, from the ids it staged in _sync_listed): each is asked for by id at the
-- end of the pass; a detail that answers not_found makes it deleted, one that answers loads it,
-- and another failure leaves it here for the next pass.
CREATE TABLE _sync_vanished (
  run_id VARCHAR PRIMARY KEY,
  created_date DATE NOT NULL,
  missed_at TIMESTAMPTZ NOT NULL,
  stream VARCHAR NOT NULL
);
