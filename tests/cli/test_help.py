"""`neuronexp --help` as a user types it: what neuronexp does, the three commands, the main keys with their current
values, three examples that work, where results go, the column reference; and a help path that imports no torch."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import REPO, console_script, run_cli
from neuronexp.config.compose import typed


def _section(text: str, title: str) -> list[str]:
    lines = text.split(f"== {title} ==", 1)[1].split("\n== ", 1)[0].splitlines()
    return [ln for ln in lines if ln.strip()]


def test_help_describes_neuronexp_its_commands_keys_examples_and_results(tmp_path: Path) -> None:
    result = run_cli(["--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("neuronexp: profile PyTorch layers") and "powered by Hydra" not in text
    commands = _section(text, "Commands")
    assert [ln.split()[0] for ln in commands] == [
        "neuronexp",
        "neuronexp-report",
        "neuronexp-compare",
        "neuronexp-export",
        "neuronexp-extract",
    ]
    # The keys shown carry the composed config's values: the same as `--cfg job` prints.
    config = yaml.safe_load(run_cli(["--cfg", "job", "--resolve"], cwd=tmp_path).stdout)
    shown = dict(
        re.findall(
            r"(?:^|\s)([a-z_.]+)=(\S+)",
            "\n".join(_section(text, "Main keys (their defaults, or what you set before --help)")),
        )
    )
    for key in (
        "input.shape",
        "input.dtype",
        "backend",
        "compile.enabled",
        "timing.iters",
        "timing.warmup",
        "launcher.devices",
    ):
        value = config
        for part in key.split("."):
            value = value[part]
        assert shown[key] == typed(value), (key, shown[key], value)
    assert shown["module"] == "rmsnorm_naive" and shown["profiler"] == "default" and shown["shapes"] == "null"
    assert shown["baseline"] == typed(config["baseline"])
    assert "docs/columns.md" in text and (REPO / "docs" / "columns.md").is_file()
    assert "outputs/runs/" in text and "outputs/sweeps/" in text and "results/" in text
    assert re.search(r"^module: .*rmsnorm_fused, rmsnorm_naive", text, flags=re.M)  # Hydra's $APP_CONFIG_GROUPS


def test_every_example_in_the_help_composes(tmp_path: Path) -> None:
    examples = [ln.split() for ln in _section(run_cli(["--help"], cwd=tmp_path).stdout, "Examples")]
    assert len(examples) == 3 and all(e[0] == "neuronexp" for e in examples)
    runs = []
    for example in examples:  # --cfg composes one cell: of a sweep, its first and its last
        args = [a for a in example[1:] if a != "-m"]
        swept = [a for a in args if "," in a and "[" not in a]
        runs.append([a.split(",")[0] if a in swept else a for a in args])
        if swept:
            runs.append([a.split("=")[0] + "=" + a.split(",")[-1] if a in swept else a for a in args])
    for args in runs:  # --cfg job composes the config (every key and option must exist) and runs nothing
        result = run_cli([*args, "--cfg", "job"], cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr[-1500:])
    assert not (tmp_path / "outputs").exists()


def test_help_shows_the_values_set_before_it(tmp_path: Path) -> None:
    text = run_cli(["backend=cpu", "input.shape=[2,8]", "compile.enabled=true", "--help"], cwd=tmp_path).stdout
    assert "backend=cpu" in text and "input.shape=[2,8]" in text and "compile.enabled=true" in text
    text = run_cli(["+experiment=layernorm", "--help"], cwd=tmp_path).stdout
    assert "baseline={module: layernorm_naive, compile.enabled: false}" in text and "shapes=llama3_8b" in text
    dims = yaml.safe_load(run_cli(["+experiment=layernorm", "--cfg", "job", "--resolve"], cwd=tmp_path).stdout)["dims"]
    assert f"input.shape=[{dims['batch']},{dims['seq']},{dims['hidden']}]" in text  # from the llama3_8b preset


def test_the_help_path_imports_neither_torch_nor_pandas(tmp_path: Path) -> None:
    code = (
        "import sys; sys.argv = ['neuronexp', '--help']\n"
        "from neuronexp.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'pandas', 'pyarrow', 'matplotlib') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "HEAVY []" in proc.stderr, proc.stderr[-2000:]
    assert "== Commands ==" in proc.stdout


@pytest.mark.parametrize("args", [["--help"], ["-sc", "install=bash"]], ids=["help", "completion"])
def test_a_reader_that_stops_reading_ends_the_command_quietly(args: list[str], tmp_path: Path) -> None:
    # `neuronexp --help | head -1`: the pipe closes before neuronexp writes (it is closed here before the
    # process has even imported Hydra), which once read as "cannot write the results" and exit 1.
    proc = subprocess.Popen(
        [console_script("neuronexp"), *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and stderr == "", stderr


@pytest.mark.parametrize(
    "args",
    [[], ["--config-dir", str(REPO / "experiments"), "module=swiglu_mlp", "input.shape=[1,8,64]"], ["shapes=tiny"]],
)
def test_the_help_neuronexp_prints_is_hydras_help_without_its_cost(cli, args: list[str]) -> None:
    # `--help` is printed by neuronexp's sweeper (engine.help), which lists only the groups the template shows;
    # naming the help template explicitly (`hydra/help=neuronexp`) still takes Hydra's own help path: both alike.
    ours, hydras = cli(*args, "--help"), cli(*args, "hydra/help=neuronexp", "--help")
    assert ours.returncode == hydras.returncode == 0, (ours.stderr, hydras.stderr)
    assert ours.stdout == hydras.stdout and "== Option groups (group=option) ==\nexperiment: " in ours.stdout


def test_the_help_of_a_sweep_is_the_help(cli) -> None:
    result = cli("-m", "module=rmsnorm_naive,rmsnorm_fused", "--help")  # Hydra's help path refused the swept value
    assert result.returncode == 0 and "== Commands ==" in result.stdout, result.stderr[-2000:]


def test_the_help_copies_hydras_config_repository_a_few_times_not_once_per_group_listing(cli, monkeypatch) -> None:
    # What made the help slow (docs/performance.md): each group listing copies Hydra's config repository (~17 ms
    # each). Counted, not timed: Hydra's own help path makes ~75 copies, neuronexp's few.
    from hydra._internal import config_repository

    copies = []
    real = config_repository.CachingConfigRepository.__init__

    def counted(self, delegate) -> None:
        copies.append(1)
        real(self, delegate)

    monkeypatch.setattr(config_repository.CachingConfigRepository, "__init__", counted)
    assert cli("hydra/help=neuronexp", "--help").returncode == 0
    hydras, copies[:] = len(copies), []
    assert cli("--help").returncode == 0
    assert len(copies) <= 16 and hydras >= 4 * len(copies), (len(copies), hydras)


def test_the_help_is_composed_once(cli, monkeypatch) -> None:
    # Hydra's main composes twice before a sweeper sees the config (once for the run mode); a plain `--help` is
    # composed once through the compose API (cli.main._quick_help), a sweep's help still through the sweeper.
    from hydra._internal.hydra import Hydra

    composed = []
    real = Hydra.compose_config

    def counted(self, *args, **kwargs):
        composed.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Hydra, "compose_config", counted)
    assert cli("--help", "module=rmsnorm_fused").returncode == 0
    assert len(composed) == 1
    composed.clear()
    assert cli("-m", "--help", "module=rmsnorm_naive,rmsnorm_fused").returncode == 0
    assert len(composed) == 2
