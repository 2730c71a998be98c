"""Runs the examples of docs/examples/read_parquet.py on a warehouse and prints what they found,
as JSON, for test/python/readers.test.ts to compare with runsync.duckdb."""

import importlib.util
import json
import sys

import pyarrow.compute as pc

spec = importlib.util.spec_from_file_location("read_parquet", sys.argv[1])
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
warehouse = sys.argv[2]

runs = example.runs_with_pyarrow(warehouse)
steps = example.steps_per_day_with_polars(warehouse)
per_day = example.runs_per_day_with_duckdb(warehouse)

dates = runs.column("created_date")
micros = pc.cast(runs.column("updated_at"), "int64")
print(
    json.dumps(
        {
            "pyarrow": {
                "created_date_type": str(runs.schema.field("created_date").type),
                "runs": sorted([i, d.isoformat(), u] for i, d, u in zip(
                    runs.column("id").to_pylist(), dates.to_pylist(), micros.to_pylist()
                )),
            },
            "polars": {
                "created_date_type": str(steps.schema["created_date"]),
                "steps_per_day": {d.isoformat(): n for d, n in steps.iter_rows()},
            },
            "duckdb": {
                "created_date_type": type(per_day[0][0]).__name__ if per_day else None,
                "runs_per_day": {d.isoformat(): n for d, n in per_day},
            },
        }
    )
)
