-- Schema evolution: every column runsync added to a resource table after the API started sending
-- a member it had not declared, every type it widened, every child table it made for a new array
-- of objects, in the order they happened. The schema in force is the declarations with these
-- changes applied (src/resources); `runsync status` lists them.
CREATE TABLE _sync_schema_changes (
  seq INTEGER PRIMARY KEY,
  changed_at TIMESTAMPTZ NOT NULL,
  resource VARCHAR NOT NULL,
  table_name VARCHAR NOT NULL,
  change VARCHAR NOT NULL,
  column_name VARCHAR,
  path VARCHAR[] NOT NULL,
  column_type VARCHAR,
  previous_type VARCHAR
);
