"""neuronexp-extract against hostile results and models (issue 32: E3, E4, E9, E12, PMCB, the saved copy): it writes
only inside --out, never over a file it did not write nor through a link, names files only with safe names, runs no
code a results directory holds, writes text from a model only as data, and writes all of its files or none.

One real run profiled in this process (helpers.extract_models.StudyNet) serves the whole module; each test tampers
with its own copy. Every test also checks that nothing outside --out changed (bytes, links and mtimes)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from omegaconf import OmegaConf

import helpers.extract_models as models
from helpers import REPO, run_cli
from neuronexp.cli.extract import extract, main
from neuronexp.engine.ownership import mark

PAYLOAD = {"_target_": "builtins.print", "x": {"_target_": "os.system", "command": "touch PWNED"}}  # issue 32, E12


def _profiled(root: Path, module: dict) -> Path:
    """A run of `module` with profiler.modules=true, as a single run leaves it (tables and config.yaml)."""
    from neuronexp.cell.group import run_cell
    from neuronexp.config import CellSpec, DType, InputConfig, ProfilerConfig, RunConfig, ScheduleConfig, TimingConfig
    from neuronexp.config.schema import BackendName, ProbeMode, RooflineConfig

    cfg = RunConfig(
        module=module,
        input=InputConfig(shape=[2, 8, 32], dtype=DType.float32, kwargs={"scale": 0.5}),
        backend=BackendName.cpu,
        profiler=ProfilerConfig(schedule=ScheduleConfig(0, 1, 1, 1), modules=True),
        timing=TimingConfig(min_seconds=0, warmup=1, iters=2, min_iters=1, rounds=1),
        roofline=RooflineConfig(probe=ProbeMode.off),
    )
    run = root / "run"
    run.mkdir()
    cell = run_cell(CellSpec(config=cfg, run_id="study", experiment="t", module_name="study_net"), run).cells.iloc[0]
    assert cell["status"] == "ok", cell["error"]
    (run / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg), resolve=True))  # as engine.job does
    mark(run, "run")
    return run


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _profiled(tmp_path_factory.mktemp("profiled"), {"_target_": "helpers.extract_models.StudyNet", "width": 32})


@pytest.fixture(scope="module")
def escaping(tmp_path_factory: pytest.TempPathFactory):
    """A run of StudyNet with its Escapes layer, whose class is named by an absolute path (the directory it names)
    while this module's tests run."""
    escape_dir = tmp_path_factory.mktemp("escape")
    assert "." not in str(escape_dir)  # the class name's last dotted part is the whole path
    old = models.Escapes.__qualname__
    models.Escapes.__qualname__ = str(escape_dir / "escaped")
    node = {"_target_": "helpers.extract_models.StudyNet", "width": 32, "escapes": True}
    yield _profiled(tmp_path_factory.mktemp("escaping"), node), escape_dir
    models.Escapes.__qualname__ = old


@pytest.fixture
def run(profiled: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(profiled, copy)
    return copy


def snapshot(root: Path, skip: Path | None = None) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under `root` but `skip`: its kind, its bytes (a file) or target (a link), its mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if skip is not None and (p == skip or skip in p.parents):
                continue
            st = p.lstat()
            if p.is_symlink():
                out[str(p)] = ("link", os.readlink(p), st.st_mtime_ns)
            elif p.is_file():
                out[str(p)] = ("file", p.read_bytes(), st.st_mtime_ns)
            else:
                out[str(p)] = ("dir", b"", 0)
    return out


def _tamper_modules(run: Path, change) -> None:
    """Apply `change` to the modules table, in both files a reader may take it from."""
    table = pq.read_table(run / "modules.parquet").to_pandas()
    change(table)
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    pq.write_table(arrow, run / "modules.parquet")
    with pa.OSFile(str(run / "modules.arrow"), "wb") as sink, pa.ipc.new_file(sink, arrow.schema) as writer:
        writer.write_table(arrow)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


def test_a_file_of_yours_in_out_is_refused_before_any_work_and_a_rerun_replaces_only_its_own(
    run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "st"
    (out / "module").mkdir(parents=True)
    (out / "module" / "linear.yaml").write_text("my: own\n")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        extract(run, 10, out)
    assert "module/linear.yaml" in _one_line(refused) and "did not write" in str(refused.value)
    assert snapshot(tmp_path) == before  # nothing written, not even the files of the units before it

    (out / "module" / "linear.yaml").unlink()
    first = extract(run, 10, out)
    assert any("+experiment=linear" in line for line in first)
    written = snapshot(out)
    extract(run, 10, out)  # its own files, unchanged since: replaced
    assert {p: v[:2] for p, v in snapshot(out).items()} == {p: v[:2] for p, v in written.items()}

    edited = out / "module" / "tagged.yaml"
    edited.write_text(edited.read_text() + "# my note\n")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="module/tagged.yaml"):
        extract(run, 10, out)
    assert snapshot(tmp_path) == before  # once edited, it is yours


@pytest.mark.parametrize("planted", ["file link", "directory link", "out link"])
def test_nothing_is_written_through_a_symbolic_link(run: Path, tmp_path: Path, planted: str) -> None:
    victim, elsewhere, out = tmp_path / "victim", tmp_path / "elsewhere", tmp_path / "st"
    victim.write_text("precious\n")
    elsewhere.mkdir()
    if planted == "file link":
        (out / "experiment").mkdir(parents=True)
        (out / "experiment" / "tagged.yaml").symlink_to(victim)
    elif planted == "directory link":
        out.mkdir()
        (out / "module").symlink_to(elsewhere)
    else:
        out.symlink_to(elsewhere)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        extract(run, 10, out)
    assert "symbolic link" in _one_line(refused)
    assert snapshot(tmp_path) == before and victim.read_text() == "precious\n" and not any(elsewhere.iterdir())


def test_a_class_name_from_a_tampered_table_never_names_a_path(run: Path, tmp_path: Path) -> None:
    assert "." not in str(tmp_path)
    (tmp_path / "abs").mkdir()
    escape = tmp_path / "abs" / "esc"

    def retype(table: pd.DataFrame) -> None:
        table.loc[table["module_path"] == "tagged", "module_type"] = f"torch.nn.modules.linear.{escape}"

    _tamper_modules(run, retype)
    out = tmp_path / "o"
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        extract(run, 10, out)
    assert "not this model's" in _one_line(refused)
    assert snapshot(tmp_path) == before and not out.exists()


def test_names_are_made_safe_or_refused() -> None:
    from neuronexp.extract.recipe import study_name

    assert study_name("transformers.models.llama.modeling_llama.LlamaMLP") == "llama_mlp"
    assert study_name("torch.nn.modules.linear./abs/dir/esc") == "abs_dir_esc"
    assert study_name("m.../../x") == "x" and study_name("m.a\nb: c") == "a_b_c"
    assert study_name("m.Inf") == "module_inf" and study_name("m.3D") == "module_3_d"  # Hydra reads `inf` as a float
    assert len(study_name("m." + "A" * 500) or "") <= 64
    assert study_name("m.///") is None and study_name("m.日本") is None and study_name("") is None


def test_a_real_class_named_like_a_path_writes_nothing_outside_out(escaping, tmp_path: Path) -> None:
    run, escape_dir = escaping
    out = tmp_path / "st"
    outside = snapshot(tmp_path, skip=out)
    lines = extract(run, 10, out)
    escaped = next(line for line in lines if "(escapes)" in line)
    assert "not extracted" in escaped and "\n" not in escaped
    assert not any(escape_dir.iterdir())  # today: escaped.yaml there, then a PicklingError and a partial .pt
    assert snapshot(tmp_path, skip=out) == outside
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert files == {
        ".neuronexp-files.json",
        *(f"module/{n}.yaml" for n in ("tagged", "opaque", "linear")),
        "module/opaque.pt",  # a saved copy holds its weights; the others load the model's
        *(f"module/{n}.weights.pt" for n in ("tagged", "linear")),
        *(f"experiment/{n}.yaml" for n in ("tagged", "opaque", "linear")),
    }


def test_a_payload_in_input_specs_runs_nothing_and_writes_nothing(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def plant(table: pd.DataFrame) -> None:
        at = table.index[table["module_path"] == "tagged"][0]
        specs = json.loads(table.at[at, "input_specs"])
        specs["kwargs"]["evil"] = PAYLOAD
        table.at[at, "input_specs"] = json.dumps(specs)

    _tamper_modules(run, plant)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        extract(run, 10, out)
    assert "kwargs.evil" in _one_line(refused) and "never a target or code" in str(refused.value)
    assert not (tmp_path / "PWNED").exists() and not out.exists() and snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "module",
    [
        {"_target_": "builtins.open", "file": "victim", "mode": "w"},  # Hydra's blocklist lets this one through
        {"_target_": "os.system", "command": "touch PWNED"},
        {"_target_": "subprocess.Popen", "args": ["touch", "PWNED"]},  # a class, but not a module's
        {"_target_": "helpers.extract_models.StudyNet", "width": {"_target_": "os.system", "command": "touch PWNED"}},
        {"_target_": "helpers.extract_models.Tagged", "width": 8, "_partial_": True},
    ],
)
def test_the_run_config_builds_only_module_and_config_classes(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: dict
) -> None:
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**cfg, "module": module}))
    (tmp_path / "victim").write_text("precious\n")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        extract(run, 10, out)
    assert "config.yaml" in _one_line(refused)
    assert not (tmp_path / "PWNED").exists() and snapshot(tmp_path) == before


def test_text_from_the_model_is_written_as_data_never_as_live_yaml(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "st"
    lines = extract(run, 10, out)
    assert all("\n" not in line for line in lines) and not any(line.startswith("hydra") for line in lines)
    for path in (out / "module").glob("*.yaml"):
        text = path.read_text()
        assert not re.search(r"^\s*(hydra|job|name):", text, flags=re.M), path
        assert set(yaml.safe_load(text)) == {"module", "input"}, path
    header = (out / "module" / "linear.yaml").read_text().splitlines()[1]
    assert header.startswith("# Linear at heads.x\\nhydra:\\n  job:\\n    name: INJECTED\\n#")
    # The layer's text argument reads back as the model had it, not as the interpolation it looks like.
    tagged = OmegaConf.load(out / "module" / "tagged.yaml")
    assert tagged.module.module.tag == models.INTERPOLATION != os.environ.get("HOME")  # inside with_weights


def _saved_node(out: Path) -> dict:
    return yaml.safe_load((out / "module" / "opaque.yaml").read_text())["module"]


def test_a_saved_copy_loads_only_with_the_bytes_extract_recorded_wherever_the_study_is(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neuronexp.config.targets import instantiate

    out = tmp_path / "st"
    extract(run, 10, out)
    node = _saved_node(out)
    assert node["path"] == "module/opaque.pt" and len(node["sha256"]) == 64  # relative: the study can move
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    out.rename(moved)
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.syspath_prepend(str(moved))  # what `neuronexp --config-dir moved` does for the run
    assert isinstance(instantiate(node), models.Opaque)

    class Payload:
        def __reduce__(self):
            return (os.system, ("touch PWNED",))

    pt = moved / "module" / "opaque.pt"
    good = pt.read_bytes()
    pt.write_bytes(pickle.dumps(Payload()))
    with pytest.raises(ValueError, match="module/opaque.pt: no file with the sha256"):
        instantiate(node)
    (tmp_path / "good.pt").write_bytes(good)
    pt.unlink()
    pt.symlink_to(tmp_path / "good.pt")  # the right bytes, through a link: still never read
    with pytest.raises(ValueError, match="sha256"):
        instantiate(node)
    assert not (tmp_path / "elsewhere" / "PWNED").exists() and not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("where", ["a file", "the run directory", "inside the run directory"])
def test_out_is_checked_before_the_model_is_built(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    def never(*args, **kwargs):
        raise AssertionError("the model was built before --out was checked")

    monkeypatch.setattr("neuronexp.extract.from_model.build_model", never)
    out = {"a file": tmp_path / "f", "the run directory": run, "inside the run directory": run / "st"}[where]
    if where == "a file":
        out.write_text("mine\n")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as refused:
        extract(run, 10, out)
    assert _one_line(refused).startswith(f"--out={out}: ") and snapshot(tmp_path) == before


def test_a_unit_that_fails_alone_is_one_line_and_a_failure_at_the_disk_writes_nothing(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from neuronexp.extract import study as extract_one
    from neuronexp.results import owned

    out = tmp_path / "st"
    timed = extract_one._alone_us

    def opaque_fails(module, *args, **kwargs):  # by what it is: the units' rank comes from one timed step
        if type(module).__name__ == "Opaque":
            raise RuntimeError("the opaque unit broke")
        return timed(module, *args, **kwargs)

    monkeypatch.setattr(extract_one, "_alone_us", opaque_fails)
    lines = extract(run, 10, out)
    broken = [line for line in lines if "the opaque unit broke" in line]
    assert len(broken) == 1 and "not extracted: rebuilt alone, it failed" in broken[0]
    written = {p.name for p in (out / "experiment").iterdir()}
    assert written == {"tagged.yaml", "linear.yaml"}  # the opaque unit alone is left out, the others written
    assert not (out / "module" / "opaque.yaml").exists() and not (out / "module" / "opaque.pt").exists()
    monkeypatch.undo()
    shutil.rmtree(out)

    extract(run, 1, out)  # a study there already: a failed rerun must leave it as it was
    (out / "notes.txt").write_text("mine\n")
    before = snapshot(tmp_path)
    staged = owned._Transaction.stage

    def disk_fills(self, rel, data):
        if len(self.temps) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", rel)
        return staged(self, rel, data)

    monkeypatch.setattr(owned._Transaction, "stage", disk_fills)
    with pytest.raises(ValueError, match="No space left on device.*nothing was written"):
        extract(run, 10, out)
    assert snapshot(tmp_path) == before  # no temporary, no new file, no directory left behind


def test_the_alone_timing_carries_the_noise_mark(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from torch import nn

    from neuronexp.extract import study as extract_one

    class Uneven(nn.Module):  # its first timed round sleeps, the others do not: rounds spread far apart
        calls = 0

        def forward(self, x):
            Uneven.calls += 1
            time.sleep(0.005 if Uneven.calls <= 2 + 3 else 0)
            return x

    args = (torch.randn(2, 4),)
    assert extract_one._alone_us(Uneven(), args, {}, 1)[1]  # measured: 5 ms against microseconds, noisy under any load
    assert extract_one.noise_of([[100.0, 101, 99], [102, 100, 98], [101, 99, 100], [100, 100, 103]]) == []
    assert extract_one.noise_of([[100.0, 101, 99], [300, 310, 305], [101, 99, 100], [100, 100, 103]])
    monkeypatch.setattr(extract_one, "_alone_us", lambda *args: (1234.0, ["rounds spread 40%"]))
    lines = extract(run, 1, tmp_path / "st")
    assert re.search(
        r"alone ~1.23 ms per call \(wall clock, eager, \d+ threads? as in the run; noisy: rounds spread 40%\)", lines[1]
    )


def test_help_says_what_it_writes_and_what_the_run_needs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    text = capsys.readouterr().out
    assert done.value.code == 0 and "profiler.modules=true" in text
    for written in ("module/NAME.yaml", "module/NAME_fused.yaml", "module/NAME.pt", "experiment/NAME.yaml"):
        assert written in text
    assert ".neuronexp-files.json" in text and "sha256" in text


def test_the_refusal_is_one_line_and_exit_2_from_the_command(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "st"
    (out / "module").mkdir(parents=True)
    (out / "module" / "linear.yaml").write_text("my: own\n")
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    result = run_cli([str(run), "--top", "10", "--out", str(out)], cwd=tmp_path, script="neuronexp-extract", env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"neuronexp-extract: error: --out={out}: module/linear.yaml ")
    assert result.stderr.count("\n") == 1 and not re.search(r"\b\w*(Error|Exception)\b", result.stderr)
    assert (out / "module" / "linear.yaml").read_text() == "my: own\n"
