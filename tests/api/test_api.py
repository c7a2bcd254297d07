"""The Python API (neuronexp.run, neuronexp.sweep) on the command line's engine: the tables it returns are the ones
neuronexp.load reads back, modules from Python's memory are profiled and timed paired against a baseline module,
and mistakes are the command line's one-line errors, raised as NeuronexpError before anything is written."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

import neuronexp
from helpers import FAST

CPU = [*FAST, "backend=cpu", "input.dtype=float32", "roofline.probe=off"]


class Naive(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Fused(Naive):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rms_norm(x, (x.shape[-1],), self.weight, 1e-6)


def test_run_returns_the_tables_load_reads_back(tmp_path: Path) -> None:
    res = neuronexp.run("module=rmsnorm_fused", *CPU, out=tmp_path / "one")
    assert list(res.cells["module"]) == ["rmsnorm_fused"] and list(res.cells["status"]) == ["ok"]
    assert res.cells.iloc[0]["module_source"] == "config" and len(res.samples) >= 3 and len(res.ops) > 0
    again = neuronexp.load(tmp_path / "one")
    pd.testing.assert_frame_equal(res.ops.reset_index(drop=True), again.ops.reset_index(drop=True))
    assert list(again.cells["run_id"]) == list(res.cells["run_id"])


def test_sweep_times_a_group_paired_and_returns_the_aggregated_tables(tmp_path: Path) -> None:
    out = tmp_path / "s"
    res = neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", *CPU, baseline="rmsnorm_naive", out=out)
    by = res.cells.set_index("module")
    assert by.loc["rmsnorm_fused", "speedup_method"] == "paired"
    assert by.loc["rmsnorm_fused", "timing_group"] == by.loc["rmsnorm_naive", "timing_group"]
    assert (out / "results" / "summary.md").is_file() and len(neuronexp.load(out).cells) == 2


def test_modules_from_memory_are_timed_paired_against_the_baseline_module(tmp_path: Path) -> None:
    naive = Naive(64)
    before = {k: v.clone() for k, v in naive.state_dict().items()}
    res = neuronexp.sweep(
        *[a for a in CPU if not a.startswith(("input.shape", "input.dtype"))],
        modules={"naive": naive, "fused": Fused(64)},
        baseline="naive",
        inputs=lambda: (torch.randn(1, 8, 64),),
        out=tmp_path / "mem",
    )
    by = res.cells.set_index("module")
    assert set(by.index) == {"naive", "fused"} and set(by["module_source"]) == {"memory"}
    assert by.loc["fused", "speedup_method"] == "paired" and by.loc["fused", "speedup_vs_baseline"] > 0
    assert by.loc["fused", "output_match"]  # the same math: checked against the baseline module's output
    assert by.loc["fused", "input_shape"] == "[1,8,64]" and by.loc["fused", "dtype"] == "float32"
    assert "never reused" in by.loc["fused", "warnings"]
    assert all(torch.equal(v, before[k]) for k, v in naive.state_dict().items()) and naive.training  # untouched
    # Run again into the same directory: modules from memory have no code fingerprint, so nothing is reused.
    again = neuronexp.sweep(
        *[a for a in CPU if not a.startswith(("input.shape", "input.dtype"))],
        modules={"naive": naive, "fused": Fused(64)},
        baseline="naive",
        inputs=(torch.randn(1, 8, 64),),
        out=tmp_path / "mem",
    )
    assert set(again.cells["status"]) == {"ok"} and not set(again.cells["run_id"]) & set(res.cells["run_id"])


@pytest.mark.parametrize(
    ("call", "line"),
    [
        (lambda out: neuronexp.run("timing.iters=0", out=out), "timing.iters=0: must be an integer >= 1"),
        (lambda out: neuronexp.run("module=a,b", out=out), "module=a,b"),
        (lambda out: neuronexp.sweep("module=nosuch", out=out), "module=nosuch: unknown option"),
        (lambda out: neuronexp.sweep(modules={"x": object()}, inputs=(torch.ones(1),), out=out), "torch.nn.Module"),
        (lambda out: neuronexp.sweep(modules={"x": Naive(4)}, inputs=(torch.ones(1, 4), 3), out=out), "forward"),
        (
            lambda out: neuronexp.sweep(inputs=(torch.ones(1),), out=out),
            "inputs: given without modules; inputs are the example inputs of modules={name: module}",
        ),
    ],
)
def test_a_mistake_is_the_one_line_error_before_anything_is_written(tmp_path: Path, call, line: str) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        call(tmp_path / "out")
    assert line in str(raised.value) and "\n" not in str(raised.value)
    assert not (tmp_path / "out").exists()


def test_a_failing_cell_is_a_row_not_an_exception(tmp_path: Path) -> None:
    res = neuronexp.run("module._target_=helpers.layers.Broken", *CPU, out=tmp_path / "bad")
    assert list(res.cells["status"]) == ["error"] and res.cells.iloc[0]["error"]


@pytest.mark.slow  # compiles one module (tens of seconds on 2 cores)
def test_the_main_study_runs_from_python(tmp_path: Path) -> None:
    res = neuronexp.sweep("+experiment=rmsnorm_sweep", *CPU, out=tmp_path / "study")
    by = res.cells.set_index("module")
    assert set(by.index) == {"rmsnorm_naive", "rmsnorm_fused", "rmsnorm_compiled"}
    assert set(by.loc[["rmsnorm_fused", "rmsnorm_compiled"], "speedup_method"]) == {"paired"}


def test_a_sweep_lets_its_own_fork_server_go_before_it_aggregates(tmp_path: Path, monkeypatch) -> None:
    """Its template's memory is freed while the results are gathered, not after; a server the caller started (this
    session's, which forks these cells) is never the sweep's to stop."""
    import neuronexp.engine.aggregate as aggregate_module
    from neuronexp.engine.executor import Local

    events: list[str] = []

    class Own:
        def serve(self, warm: list[str]) -> None:
            events.append("serve")

        def release(self) -> None:
            events.append("release")

    aggregate = aggregate_module.aggregate
    monkeypatch.setattr(aggregate_module, "aggregate", lambda *a, **k: events.append("aggregate") or aggregate(*a, **k))

    def with_own(executor: Local) -> Local:
        executor.server = Own()
        return executor

    monkeypatch.setattr(Local, "__enter__", with_own)
    neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", *CPU, out=tmp_path / "own")
    assert events == ["serve", "release", "aggregate"]
    events.clear()
    monkeypatch.setattr(Local, "__enter__", lambda executor: executor)  # the caller's server only
    neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", *CPU, out=tmp_path / "theirs")
    assert events == ["aggregate"]


def test_a_baseline_given_as_key_value_pairs_is_the_cell_they_name(tmp_path: Path) -> None:
    res = neuronexp.sweep(
        "module=rmsnorm_naive,rmsnorm_fused",
        *CPU,
        baseline={"module": "rmsnorm_naive", "input.shape": "[1,8,64]"},
        out=tmp_path / "s",
    )
    by = res.cells.set_index("module")
    assert by.loc["rmsnorm_fused", "speedup_method"] == "paired"
    assert by.loc["rmsnorm_fused", "baseline_run_id"] == by.loc["rmsnorm_naive", "run_id"]


def test_a_baseline_given_as_an_override_string_is_the_sweeps_baseline(tmp_path: Path) -> None:
    """`baseline=` among the overrides, as on the command line, with no `baseline` argument: that is the baseline."""
    res = neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", "baseline=rmsnorm_naive", *CPU, out=tmp_path / "s")
    by = res.cells.set_index("module")
    assert by.loc["rmsnorm_fused", "speedup_method"] == "paired"
    assert by.loc["rmsnorm_fused", "baseline_run_id"] == by.loc["rmsnorm_naive", "run_id"]


def test_a_config_dir_of_yours_serves_run_and_sweep_and_joins_sys_path_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    mine = tmp_path / "mine"
    (mine / "module").mkdir(parents=True)
    (mine / "api_twice_layers.py").write_text(
        "import torch\n\n\nclass Twice(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    )
    (mine / "module" / "twice.yaml").write_text("_target_: api_twice_layers.Twice\n")
    one = neuronexp.run("module=twice", *CPU, out=tmp_path / "one", config_dir=mine)
    many = neuronexp.sweep("module=twice,rmsnorm_naive", *CPU, out=tmp_path / "many", config_dir=mine)
    assert list(one.cells["module"]) == ["twice"] and list(one.cells["status"]) == ["ok"]
    assert sorted(many.cells["module"]) == ["rmsnorm_naive", "twice"] and set(many.cells["status"]) == {"ok"}
    assert sys.path.count(str(mine.resolve())) == 1


def test_inputs_without_modules_is_refused_in_these_words(tmp_path: Path) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(inputs=(torch.ones(1),), out=tmp_path / "out")
    assert str(raised.value) == "inputs: given without modules; inputs are the example inputs of modules={name: module}"


def test_an_override_that_does_not_parse_is_named_in_the_line(tmp_path: Path) -> None:
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.run("timing.iters=[1,", out=tmp_path / "out")
    assert str(raised.value).startswith("timing.iters=[1,: cannot parse") and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("callback", "target"),
    [
        (["hydra/callbacks=mlflow"], "neuronexp.cli.callbacks.MlflowExport"),
        (["+hydra.callbacks.q._target_=helpers.callbacks.OnlyMultirun"], "helpers.callbacks.OnlyMultirun"),
    ],
)
def test_a_callback_whose_multirun_hooks_nothing_would_call_is_refused(tmp_path: Path, callback, target) -> None:
    """Only Hydra's main calls on_multirun_start/end; from Python nothing would, and `hydra/callbacks=mlflow` logged
    nothing without a word (the command line refuses a missing tracking URI, and logs with one)."""
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.run(*FAST, *callback, out=tmp_path / "out")
    name = "mlflow" if "mlflow" in callback[0] else "q"
    line = str(raised.value)
    assert line.startswith(f"hydra.callbacks.{name}={target}: its on_multirun hooks run only from the command line")
    assert "\n" not in line and not (tmp_path / "out").exists()


def test_a_callback_that_does_not_import_is_the_same_one_line_from_python_and_the_command_line(
    tmp_path: Path, cli, capfd, caplog
) -> None:
    """Hydra's words were "Error locating target ..., set env var HYDRA_FULL_ERROR=1 ..." without the reason, and
    from Python three more lines Hydra's get_class logged; now the key, the value and why, nothing else."""
    callback = "+hydra.callbacks.x._target_=os.nosuch"
    line = (
        "hydra.callbacks.x._target_=os.nosuch: cannot be imported (No module named 'os.nosuch'; 'os' is not a "
        "package); give a dotted path to a class importable from the working directory or experiments/"
    )
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.run(*FAST, callback, out=tmp_path / "out")
    assert str(raised.value) == line and capfd.readouterr().err == "" and not (tmp_path / "out").exists()
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]  # printed outside pytest
    res = cli(*FAST, callback, f"hydra.run.dir={tmp_path / 'cli'}")
    assert (res.returncode, res.stderr) == (2, f"neuronexp: error: {line}\n") and not (tmp_path / "cli").exists()


@pytest.mark.parametrize("target", ["helpers.callbacks.Detailed", "helpers.callbacks.detailed"])  # a factory too
def test_a_callback_with_job_hooks_only_runs_from_python(tmp_path: Path, target: str) -> None:
    log = tmp_path / "hooks.jsonl"
    hooks = [f"+hydra.callbacks.d._target_={target}", f"+hydra.callbacks.d.path={log}"]
    res = neuronexp.run(*FAST, *hooks, "+hydra.callbacks.d.name=mine", out=tmp_path / "out")
    hooks_called = [json.loads(line)["hook"] for line in log.read_text().splitlines()]
    assert set(res.cells["status"]) == {"ok"} and hooks_called[0] == "run_start" and hooks_called[-1] == "run_end"


def test_a_config_dirs_layers_come_before_a_same_named_module_on_sys_path(tmp_path: Path, monkeypatch) -> None:
    """As with --config-dir: your directory goes first on sys.path, so its layer file is the one imported, not a
    same-named module of a directory already there."""
    other, mine = tmp_path / "other", tmp_path / "mine"
    (mine / "module").mkdir(parents=True)
    other.mkdir()
    (other / "api_first_layers.py").write_text("raise ImportError('not the config dir file')\n")
    (mine / "api_first_layers.py").write_text(
        "import torch\n\n\nclass Twice(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    )
    (mine / "module" / "twice.yaml").write_text("_target_: api_first_layers.Twice\n")
    monkeypatch.setattr(sys, "path", [str(other), *sys.path])
    res = neuronexp.run("module=twice", *CPU, out=tmp_path / "one", config_dir=mine)
    assert list(res.cells["status"]) == ["ok"], res.cells.iloc[0]["error"]
    assert sys.path[:2] == [str(mine.resolve()), str(other)]


def test_a_launcher_that_gives_up_returns_what_finished_and_says_how_to_resume(tmp_path: Path, capsys) -> None:
    """The command line's exit status 3, from Python: no exception, the cells that finished (none here: submitit
    could not make its folder under a file), and the line saying how to resume on stderr."""
    (tmp_path / "a_file").write_text("not a directory\n")
    out = tmp_path / "s"
    res = neuronexp.sweep(
        "module=rmsnorm_naive,rmsnorm_fused",
        *CPU,
        "hydra/launcher=submitit_local",
        f"hydra.launcher.submitit_folder={tmp_path / 'a_file' / 'jobs'}",
        out=out,
    )
    assert res.cells.empty and (out / "results" / "summary.md").is_file()
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("neuronexp: ")]
    assert said == [
        f"neuronexp: [Errno 20] Not a directory: '{tmp_path / 'a_file' / 'jobs'}'; "
        f"rerun with hydra.sweep.dir={out} to resume the sweep"
    ]


def test_a_sweep_whose_results_cannot_be_written_is_the_one_line_error(tmp_path: Path) -> None:
    from neuronexp.engine.ownership import mark

    out = tmp_path / "s"
    out.mkdir()
    mark(out, "sweep")  # an earlier sweep's directory, where someone put a file in results/'s place
    (out / "results").write_text("a file where results/ goes")
    with pytest.raises(neuronexp.NeuronexpError) as raised:
        neuronexp.sweep(
            *[a for a in CPU if not a.startswith(("input.shape", "input.dtype"))],
            modules={"naive": Naive(8)},
            inputs=(torch.ones(1, 8),),
            out=out,
        )
    line = str(raised.value)
    assert line.startswith(f"aggregating {out}/results failed (FileExistsError") and "\n" not in line
    assert line.endswith(f"rerun with hydra.sweep.dir={out} to aggregate again")
    assert (out / "results").read_text() == "a file where results/ goes"


def test_a_dry_run_returns_the_tables_without_a_row_and_writes_nothing(tmp_path: Path) -> None:
    res = neuronexp.sweep("module=rmsnorm_naive,rmsnorm_fused", *CPU, "sweep.dry_run=true", out=tmp_path / "s")
    assert res.cells.empty and res.ops.empty and res.samples.empty and "latency_median_us" in res.cells
    assert not (tmp_path / "s").exists()
