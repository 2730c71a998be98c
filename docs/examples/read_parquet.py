"""Reading runsync's warehouse from Python: the Parquet tree with pyarrow and polars, and
analytics.duckdb (views over that tree) with DuckDB. Each can run while runsync writes.

    python read_parquet.py [warehouse]        # default: $RUNSYNC_WAREHOUSE_DIR or ./warehouse
"""

import os
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds


def runs_with_pyarrow(warehouse: str) -> pa.Table:
    """Every run. The folders are named created_date=YYYY-MM-DD; pyarrow reads a folder's value
    as text unless told it is a date."""
    created_date = ds.partitioning(pa.schema([("created_date", pa.date32())]), flavor="hive")
    runs = ds.dataset(f"{warehouse}/parquet/runs", format="parquet", partitioning=created_date)
    return runs.to_table(columns=["id", "created_date", "status", "agent_name", "updated_at"])


def steps_per_day_with_polars(warehouse: str) -> pl.DataFrame:
    """Execution steps per day of their run's creation; polars reads created_date as a date."""
    steps = pl.scan_parquet(f"{warehouse}/parquet/run_steps/**/*.parquet", hive_partitioning=True)
    return steps.group_by("created_date").agg(pl.len().alias("steps")).sort("created_date").collect()


def runs_per_day_with_duckdb(warehouse: str) -> list[tuple]:
    """Runs per day from analytics.duckdb: the same table names as runsync.duckdb."""
    with duckdb.connect(f"{warehouse}/analytics.duckdb", read_only=True) as con:
        return con.sql("SELECT created_date, count(*) AS runs FROM runs GROUP BY 1 ORDER BY 1").fetchall()


if __name__ == "__main__":
    warehouse = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("RUNSYNC_WAREHOUSE_DIR", "warehouse")
    runs = runs_with_pyarrow(warehouse)
    print(f"{runs.num_rows} runs; created_date is {runs.schema.field('created_date').type}")
    print(runs.group_by("status").aggregate([("id", "count")]).to_pandas())
    print(steps_per_day_with_polars(warehouse).tail(7))
    for day, n in runs_per_day_with_duckdb(warehouse)[-7:]:
        print(day.isoformat(), n)
