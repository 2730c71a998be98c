// What the warehouse's bookkeeping tables hold, for the warehouse reference (docs/warehouse.md).
// Their DDL lives in schemas/duckdb (numbered files, applied once and never edited), so their
// meanings are kept here, one line per column; the reference test fails when a table or column of
// a freshly migrated warehouse has no line here, or a line names one that does not exist.

export interface BookkeepingNote {
  /** What a row is, and who reads the table. */
  readonly about: string;
  readonly columns: Readonly<Record<string, string>>;
}

export const BOOKKEEPING: Readonly<Record<string, BookkeepingNote>> = {
  _sync_audit: {
    about: 'One row per pass, backfill or snapshot: written when it starts, completed when it ends.',
    columns: {
      id: "The pass's id, as its log lines carry it.",
      kind: 'sync, reconcile, snapshot, backfill or pending.',
      started_at: 'When it started.',
      finished_at: 'When it ended; null while it runs, or when it was killed.',
      status: 'running, ok, partial (a resource was refused), failed or interrupted.',
      counts:
        'What it did, as JSON: runs listed, fetched and loaded, catalog versions, freshness lags, cursor restarts…',
      requests: 'API requests it made.',
      rate_limited: 'How many of them were answered 429.',
      errors: 'The errors it met, as JSON.',
      requests_by_endpoint: 'Its requests per endpoint, as JSON.',
      retries: 'Requests it sent again after a failure.',
      window_from: 'Start of the created-time window it read.',
      window_to: 'End (excluded) of the created-time window it read.',
    },
  },
  _sync_state: {
    about: 'Small named values the sync keeps: the watermark, the walks in progress and their cursors.',
    columns: {
      key: 'The name, e.g. `runs.watermark`, `runs.live`, `runs.rolling`.',
      value: 'The value, as JSON.',
      updated_at: 'When it was last written.',
    },
  },
  _sync_open_runs: {
    about: 'The runs not yet settled, checked again by every pass until they settle or leave the horizon.',
    columns: {
      run_id: 'The run (runs.id).',
      created_at: "The run's created_at.",
      updated_at: "The run's updated_at when last loaded.",
      reason: 'Why it is open: running, paused, waiting_for_approval, scheduled_to_resume or resolution_pending.',
      last_checked_at: 'When a pass last looked at it.',
    },
  },
  _sync_pending_runs: {
    about: 'Runs whose detail could not be fetched when listed; fetched again at the end of every pass.',
    columns: {
      run_id: 'The run (runs.id).',
      listed_updated_at: "The summary's updated_at when it was last listed.",
      attempts: 'How many times the detail was asked for.',
      first_failed_at: 'When it first failed.',
      last_failed_at: 'When it last failed.',
      last_error: 'Why it last failed.',
    },
  },
  _sync_rejected: {
    about:
      'Payloads the API sent that break their schema, kept whole (secrets masked, the personal-data policy applied) with the reason.',
    columns: {
      endpoint: 'The endpoint it came from.',
      record_id: "The record's id, when it had one.",
      fetched_at: 'When it was fetched.',
      reason: 'What is wrong with it.',
      payload: 'The payload, as JSON text.',
    },
  },
  _sync_quarantine: {
    about:
      'Records the schema contract kept out of a frozen table, with why; the records are in the raw archive, and `runsync quarantine replay` loads them once the contract lets them in.',
    columns: {
      resource: 'The resource the record belongs to (runs, tools…).',
      record_id: "The record's id.",
      updated_at: "The record's updated_at, as the API sent it (the latest version kept out).",
      quarantined_at: 'When it was last kept out.',
      reasons: 'What the contract refused: a new member, a changed type or a new array, by table and column.',
      payload_hash: 'MD5 of the payload kept out, as the raw archive holds it (a replay finds it by this).',
    },
  },
  _sync_completeness: {
    about:
      'What the API listed of each UTC created day when a listing last covered the day whole: the API side of `sync_completeness`. Written in the commit of the page that finished the day.',
    columns: {
      day: 'The UTC day the runs were created.',
      listed_runs: 'Runs the listing found created that day (each once).',
      listed_checksum:
        "Bitwise XOR over those runs of `completeness_hash(id, updated_at)`: 64 bits of the MD5 of the run's id and updated_at (microseconds since the epoch), so the order of the listing does not matter.",
      listing_started_at: 'When the listing read its first page of the day.',
      verified_at: 'When the listing finished the day.',
      listed_by: 'What listed it: sync (the live window), reconcile, backfill or verify.',
    },
  },
  _sync_listed: {
    about:
      'Summaries a listing has read of days it has not yet covered whole, by listing; they leave once the day is written to `_sync_completeness`, or when the listing starts elsewhere.',
    columns: {
      stream: 'The listing: the live window, the rolling reconciliation, a backfill, verify.',
      id: 'The run (runs.id).',
      created_us: "The summary's created_at, microseconds since the epoch.",
      updated_us: "The summary's updated_at, microseconds since the epoch; null when unreadable.",
      listed_at: 'When its page was committed.',
    },
  },
  _sync_vanished: {
    about:
      'Stored runs missing from a whole listing of their created day, each asked for by id at the end of the pass: `not_found` makes it deleted, an answer loads it.',
    columns: {
      run_id: 'The run (runs.id).',
      created_date: "The run's created day.",
      missed_at: 'When the listing that missed it covered the day.',
      stream: 'The listing that missed it (as in `_sync_listed`).',
    },
  },
  _sync_deletions: {
    about:
      'Runs the API deleted, one row per deletion, closed when the run comes back; `runsync rebuild` applies the open ones again.',
    columns: {
      run_id: 'The run (runs.id).',
      created_date: "The run's created day.",
      deleted_at: "When runsync found it deleted (the API's clock).",
      mode: '`soft` (its states closed in runs_history) or `hard` (removed), as RUNSYNC_DELETES was.',
      restored_at: 'When a later look found the run again; null while it stays deleted.',
    },
  },
  _sync_export_dirty: {
    about: 'What changed since the last Parquet export; the export rewrites these and clears them.',
    columns: {
      table_name: 'The table that changed.',
      created_date: 'The partition that changed; null for a catalog table (one file).',
      created_at: 'The created time of the run that changed, so only the file of its span is rewritten.',
    },
  },
  _sync_export_layout: {
    about: 'The span of created time each partition of the run tables was given when first written.',
    columns: {
      created_date: 'The partition.',
      span_minutes: 'Minutes of created time per file: 1440 is one `data.parquet`, less is `part-HHMM.parquet` files.',
    },
  },
  _sync_schema_changes: {
    about: 'Every change schema evolution made to the tables, in order (`runsync status` lists them).',
    columns: {
      seq: 'Order of the change.',
      changed_at: 'When it was made.',
      resource: 'The resource (its live table).',
      table_name: 'The table changed, or made.',
      change: 'column (a new column), widen (a wider type), child-table (a new table) or held (evolution off).',
      column_name: 'The column added or widened; null for a new child table.',
      path: 'The API member, as a path of member names.',
      column_type: 'The new type.',
      previous_type: 'The type before a widening.',
    },
  },
  _sync_run_keys: {
    about: 'A hash of every stored run id beside its created_date: which days to look in for a run.',
    columns: {
      id_hash: 'The first 64 bits of the md5 of the run id.',
      created_date: 'A day the run lies in.',
    },
  },
  _sync_migrations: {
    about: 'The schema files (schemas/duckdb) applied to this warehouse.',
    columns: {
      version: "The file's number.",
      name: "The file's name.",
      checksum: "A hash of the file's text when it was applied.",
      applied_at: 'When it was applied.',
    },
  },
  _report_runs_day: {
    about: 'Runs per day, agent and resolution type, summed for `runsync report`.',
    columns: {
      created_date: 'The day.',
      agent_id: 'The agent.',
      resolution_type: 'The resolution type.',
      runs: 'Runs.',
      agent_named_at: 'The created_at of the newest of those runs that named the agent.',
      agent_name: 'The name that run carried.',
    },
  },
  _report_tool_calls_day: {
    about: 'Tool calls per day, recorded tool name and type, and duration bucket, for `runsync report`.',
    columns: {
      created_date: 'The day.',
      tool_name: 'The recorded tool name.',
      tool_type: 'The tool type.',
      duration_bucket: 'The duration, as hundredths of its natural logarithm (null: none).',
      calls: 'Calls.',
      errors: 'Calls with an error.',
    },
  },
  _report_evaluation_values_day: {
    about: 'Evaluations per day, attribute and value, for `runsync report`.',
    columns: {
      created_date: 'The day.',
      attribute_id: 'The evaluation attribute.',
      value: 'The value.',
      evaluations: 'Evaluations.',
    },
  },
  _report_attributes_day: {
    about: 'Evaluations per day and attribute, for `runsync report`.',
    columns: {
      created_date: 'The day.',
      attribute_id: 'The evaluation attribute.',
      evaluations: 'Evaluations.',
      runs: 'Runs with one.',
      named_at: 'When the latest name was recorded.',
      attribute_name: 'The latest name recorded.',
    },
  },
  _report_waiting_day: {
    about: 'Runs waiting for an approval, per day, for `runsync report`.',
    columns: {
      created_date: 'The day.',
      run_id: 'The run.',
      agent_name: "The run's agent.",
      pending_tool_name: 'The tool awaiting approval.',
      ticket_title: "The ticket's title.",
      since: 'When the pending step asked, or the run last changed.',
    },
  },
  _report_days: {
    about: 'The days summed in every `_report_*` table; other days are summed from the tables when needed.',
    columns: { created_date: 'The day.' },
  },
};

/** The completeness ledger's views, for analysts (schemas/duckdb/0021_completeness.sql). */
export const LEDGER_VIEWS: Readonly<Record<string, BookkeepingNote>> = {
  sync_completeness: {
    about:
      'One row per UTC created day with runs on either side: what the API listed when the day was last listed whole (`_sync_completeness`) beside what the warehouse holds now, computed from `runs` whenever it is read. The live window, the rolling reconciliation, backfills without filters and `runsync verify` list days whole; a day listed only in part gets no API count.',
    columns: {
      day: 'The UTC day the runs were created.',
      listed_runs: 'Runs the API listed that day when it was last listed whole; null: never listed whole.',
      warehouse_runs: 'Runs of that day in `runs` now, those marked deleted left out.',
      listed_checksum: "The listing's checksum of (id, updated_at); see `_sync_completeness`.",
      warehouse_checksum: 'The same checksum over those runs.',
      open_runs: 'Runs of that day not yet settled (`_sync_open_runs`).',
      verified_at: 'When a listing last covered the day whole.',
      listed_by: 'What listed it: sync, reconcile, backfill or verify.',
      state:
        'agree; disagree (other runs, or an older version of one, than the listing); changed (same count, other checksum, and runs of the day fetched since the listing began: newer versions); unverified (never listed whole); current (the live window has not finished the day).',
    },
  },
  sync_completeness_issues: {
    about:
      'The days of `sync_completeness` to look at: those that disagree, those never listed whole, and those of the open-run horizon last listed whole longer ago than `RUNSYNC_RECONCILE_EVERY` (as the last pass had them). `runsync verify` lists them again and fetches what is missing or stale.',
    columns: {
      day: 'As in `sync_completeness`.',
      listed_runs: 'As in `sync_completeness`.',
      warehouse_runs: 'As in `sync_completeness`.',
      listed_checksum: 'As in `sync_completeness`.',
      warehouse_checksum: 'As in `sync_completeness`.',
      open_runs: 'As in `sync_completeness`.',
      verified_at: 'As in `sync_completeness`.',
      listed_by: 'As in `sync_completeness`.',
      state: 'As in `sync_completeness`.',
      issue: 'Why the day is listed, in words.',
    },
  },
};
