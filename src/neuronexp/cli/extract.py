"""`neuronexp-extract RUN_DIR --top K --out DIR`: the K hottest modules of a run profiled with profiler.modules=true,
each as a layer study of its own (module and experiment YAML; docs/layers.md), with the command for each and the
module's share in the model beside its standalone time. Exit status: 0 written; 2 bad input, nothing written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from neuronexp.cli.common import add_version, positive_int, quiet_on_closed_stdout
from neuronexp.extract.hot_units import ExtractError

_WRITES = """\
writes into DIR, for each module class: module/NAME.yaml (the module alone, with the inputs the model called it
with), module/NAME.weights.pt (the module's weights in the model, a state dict loaded only while its sha256 matches
the one in the YAML), module/NAME_fused.yaml (where a fused form is known), module/NAME.pt (a saved copy, only for a
module that cannot be rebuilt from its config or constructor), and experiment/NAME.yaml (eager vs compiled, the module
itself as baseline); and .neuronexp-files.json, the record of what it wrote. Each module is checked against itself in
the model on the same inputs first (output and operators); one that fails alone is one line, the others are written.
A rerun replaces only files it wrote and you did not change; anything else is refused before any work, as is a DIR
that is a link or a results directory. Nothing is written unless every file can be.

RUN_DIR must come from a run with profiler.modules=true, e.g.
  neuronexp module=... profiler.modules=true hydra.run.dir=outputs/model
  neuronexp-extract outputs/model --top 3 --out studies
  neuronexp --config-dir studies +experiment=NAME
Exit status: 0 written; 2 bad input (one line), nothing written."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="neuronexp-extract",
        description="Turn the hottest modules of a run profiled with profiler.modules=true into layer studies\n"
        "(Hydra configs): each module alone, eager vs compiled, and its fused form where one is known.",
        epilog=_WRITES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", type=Path, metavar="RUN_DIR", help="a run directory (or a sweep: its first run with modules)")
    p.add_argument(
        "--top", type=positive_int, default=3, metavar="K", help="hottest module classes to extract (default 3)"
    )
    p.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="the study's config directory (module/, experiment/)"
    )
    add_version(p)
    return p


def extract(run_dir: Path, top: int, out: Path) -> list[str]:
    """Write the studies of the `top` hottest modules of `run_dir` into `out`; the lines to print. Everything that
    can be checked is checked before the model is built or timed (--out, the table, the names, the files to write);
    the files are written together at the end, or none. Errors: ExtractError, Refused, BadSpecs, ModelRefused (one
    line each)."""
    from neuronexp.extract.from_model import build_model, run_config
    from neuronexp.extract.hot_units import plan_units
    from neuronexp.extract.study import study_files
    from neuronexp.moduletime.views import hot_units, of_run
    from neuronexp.results import read_any
    from neuronexp.results.owned import check_free, commit, prepare

    owned = prepare(out, f"--out={out}")
    found = read_any(run_dir)
    modules = found.results.modules
    if modules.empty:
        raise ExtractError(f"{run_dir}: no modules table; run it again with profiler.modules=true")
    run_id = str(modules["run_id"].iloc[0])
    table = of_run(modules, run_id)
    if table["total_device_us"].isna().all():
        raise ExtractError(
            f"{run_dir}: no module has a device time (no source split the device time per op): none to rank"
        )
    job_dir = found.job_dir_of[run_id]
    units = plan_units(hot_units(table).head(top), table, job_dir / "modules.parquet")
    check_free(owned, [rel for unit in units for rel in unit.files()])
    cfg = run_config(job_dir)
    model, dtype = build_model(cfg, str(job_dir / "config.yaml"))
    files, lines = study_files(units, model, dtype, cfg, out, run_threads(found.results.cells, run_id))
    try:
        commit(owned, files)
    except OSError as exc:  # a full or read-only disk: what it had staged or placed is gone again
        raise ExtractError(f"--out={out}: cannot be written ({exc.strerror or exc}); nothing was written") from None
    return lines


def run_threads(cells: Any, run_id: str) -> int:
    """The threads the run's cell was timed with (its `threads` column), which extract times "alone" with too;
    where the table has none, what a cell would use here (host.threads)."""
    import torch

    from neuronexp.host.threads import default_threads

    row = cells[cells["run_id"] == run_id] if "threads" in cells else cells.iloc[:0]
    found = float(row["threads"].iloc[0]) if not row.empty and row["threads"].notna().iloc[0] else 0.0
    if found >= 1 and found == int(found):
        return int(found)
    return default_threads(torch.get_num_threads()) or torch.get_num_threads()


def _message(exc: Exception) -> str:
    """The one line: the message alone (no exception class names); an OSError as `path: what`."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else "failed without a message (a bug: please report it)"


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        lines = extract(args.dir, args.top, args.out)
    except Exception as exc:  # noqa: BLE001 - one line for whatever stopped it (bad input, a model that does not build)
        print(f"neuronexp-extract: error: {_message(exc)}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
