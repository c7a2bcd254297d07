"""The results contract and its files: the three tidy tables (contract), writing a job's files atomically
(files) and reading runs and sweeps back (read). Imports nothing else from neuronexp."""

from neuronexp.results.contract import (
    CELL_SCHEMA,
    LABEL_COLUMNS,
    OP_SCHEMA,
    OPTIONAL_TABLES,
    SAMPLE_SCHEMA,
    SCHEMAS,
    TABLES,
    USABLE,
    Results,
    arrow_table,
    frame,
    no_results,
    to_arrow,
    usable,
    usable_cells,
)
from neuronexp.results.load import load
from neuronexp.results.read import (
    JOBS_MANIFEST,
    DamagedResults,
    Found,
    job_dirs_of,
    read_any,
    read_job,
    read_jobs,
    run_dirs,
)
from neuronexp.results.regular import LinkRefused, open_regular, read_regular

__all__ = [
    "CELL_SCHEMA",
    "OPTIONAL_TABLES",
    "DamagedResults",
    "Found",
    "JOBS_MANIFEST",
    "LABEL_COLUMNS",
    "LinkRefused",
    "OP_SCHEMA",
    "Results",
    "SAMPLE_SCHEMA",
    "SCHEMAS",
    "TABLES",
    "USABLE",
    "arrow_table",
    "frame",
    "no_results",
    "job_dirs_of",
    "load",
    "open_regular",
    "read_any",
    "read_job",
    "read_jobs",
    "read_regular",
    "run_dirs",
    "to_arrow",
    "usable",
    "usable_cells",
]
