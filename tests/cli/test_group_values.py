"""A config group given a value that Hydra's grammar reads as a number, a boolean or null (`module=1.5`,
`module=inf`, a sweep `module=ident,inf`) is one line naming the override and the group's options, exit status 2,
before any work (issue 32, NI): Hydra's own `ValueError` would otherwise end in a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from helpers import run_cli
from neuronexp.cli.main import main

RMSNORMS = "rmsnorm_compiled, rmsnorm_fused, rmsnorm_naive"


def _main(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The console script's main() in this process (it edits sys.argv, sys.path and the environment: restored)."""
    monkeypatch.setattr(sys, "argv", ["neuronexp"])
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("PYTHONPATH", "HYDRA_FULL_ERROR"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.delenv("HYDRA_FULL_ERROR")
    with pytest.raises(SystemExit) as ended:
        main(argv)
    return int(ended.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("module=1.5", "module=1.5: unknown option (1.5 reads as a number, not a config's name)"),
        ("module=inf", "module=inf: unknown option (inf reads as a number"),
        ("module=nan", "module=nan: unknown option (nan reads as a number"),
        ("module=true", "module=true: unknown option (true reads as a boolean"),
        ("module=null", "module=null: unknown option (null reads as a null"),
        (
            "profiler=3",
            "profiler=3: unknown option (3 reads as a number, not a config's name); allowed: one of default",
        ),
        ("+experiment=2", "experiment=2: unknown option (2 reads as a number, not a config's name); allowed: one of"),
    ],
)
def test_a_number_like_group_value_is_one_line_with_the_groups_options(
    override: str, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _main([override], monkeypatch, capsys)
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"neuronexp: error: {named}"), err[-2000:]
    if override.startswith("module"):
        assert RMSNORMS in lines[0]
    assert not any(tmp_path.iterdir())  # before any work: nothing written


def test_a_sweep_names_the_value_and_lists_the_options_of_your_config_dir_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conf" / "module").mkdir(parents=True)
    (tmp_path / "conf" / "module" / "ident.yaml").write_text("_target_: torch.nn.Identity\n")
    monkeypatch.chdir(tmp_path)
    code, err = _main(["-m", "--config-dir", "conf", "module=ident,inf"], monkeypatch, capsys)
    (line,) = err.splitlines()
    assert code == 2 and line.startswith("neuronexp: error: module=inf: unknown option (inf reads as a number")
    assert "ident, layernorm_fused" in line  # the option of your --config-dir among neuronexp's own
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


def test_the_console_script_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    result = run_cli(["module=1.5"], cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("neuronexp: error: module=1.5: unknown option"), result.stderr[-2000:]


def test_inside_a_running_hydra_the_options_come_from_its_own_config_loader(tmp_path: Path) -> None:
    from hydra import initialize_config_dir

    from neuronexp.cli.oneline import user_error_line

    (tmp_path / "module").mkdir()
    (tmp_path / "module" / "mine.yaml").write_text("_target_: torch.nn.Identity\n")
    (tmp_path / "config.yaml").write_text("defaults:\n  - module: mine\n")
    error = ValueError("Config group override must be a string or a list. Got float")
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        line = user_error_line(error, ["module=1.5"])
    assert line == "module=1.5: unknown option (1.5 reads as a number, not a config's name); allowed: one of mine"


def test_a_launcher_preset_whose_plugin_is_missing_names_the_extra() -> None:
    from hydra.errors import MissingConfigException

    from neuronexp.cli.oneline import user_error_line

    text = "In 'hydra/launcher/slurm': Could not load 'hydra/launcher/submitit_slurm'."  # Hydra 1.3's words
    line = user_error_line(MissingConfigException(text, "hydra/launcher/submitit_slurm"), ["hydra/launcher=slurm"])
    assert line == "hydra/launcher=slurm: its plugin is not installed; install it with pip install 'neuronexp[slurm]'"
