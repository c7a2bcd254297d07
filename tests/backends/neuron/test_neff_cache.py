"""The NEFF cache, pinned before the first compile (TORCH_NEURONX_NEFF_CACHE_DIR in the cell's process, the same
path given to NeuronConfig), over the torch-neuronx STAND-IN, whose emulated compiler writes each NEFF into the cache
the variable names when it first sees the NEFF."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path

import pytest

from helpers.layers import handed
from helpers.neuron_standin.fixture import _drop_standin, neuron_config
from neuronexp.backends import resolve_backend
from neuronexp.backends.neuron.neuron_backend import NeuronBackend
from neuronexp.backends.neuron.options import check_options as neuron_options
from neuronexp.config import BackendName, ConfigError, NeuronDeviceConfig, NeuronProfilerConfig

VAR = "TORCH_NEURONX_NEFF_CACHE_DIR"


def _backend(**profiler: object) -> NeuronBackend:
    backend = resolve_backend("neuron", neuron_config(NeuronDeviceConfig(), NeuronProfilerConfig(**profiler)))
    assert isinstance(backend, NeuronBackend)
    return backend


def test_by_default_one_per_user_cache_per_sdk_version_serves_every_cell(standin, probe_cache: Path, tmp_path: Path):
    first, second = _backend(), _backend()  # two cells of one process (a comparison group, a sweep's fork)
    version = probe_cache / "neff" / f"torch-neuronx-{standin.__version__}"  # a new SDK does not read older NEFFs
    assert first.neff_cache.path == second.neff_cache.path == str(version) == os.environ[VAR]
    assert first.neff_cache.source == second.neff_cache.source == "neuronexp cache"  # the second's is still ours
    for made in (probe_cache / "neff", version):
        assert made.is_dir() and oct(made.stat().st_mode & 0o777) == "0o700"
    first.profiler_kwargs(tmp_path)
    assert standin.STATE.configs[-1]["neff_cache_dir"] == first.neff_cache.path  # the same path to NeuronConfig


def test_the_users_own_variable_wins_and_is_recorded(standin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, str(tmp_path / "mine"))
    backend = _backend(neff_cache_dir=str(tmp_path / "key"))
    assert backend.neff_cache.path == str(tmp_path / "mine") == os.environ[VAR]
    assert backend.neff_cache.source == "TORCH_NEURONX_NEFF_CACHE_DIR"
    assert backend.notes == [
        f"profiler.neuron.neff_cache_dir={tmp_path / 'key'} not used: {VAR}={tmp_path / 'mine'} is set"
    ]


def test_the_config_key_names_it_when_the_variable_is_unset(standin, tmp_path: Path) -> None:
    backend = _backend(neff_cache_dir=str(tmp_path / "key"))
    assert backend.neff_cache.path == str(tmp_path / "key") == os.environ[VAR]
    assert backend.neff_cache.source == "profiler.neuron.neff_cache_dir" and backend.notes == []


def test_it_is_pinned_before_neuronexp_imports_torch_neuronx(standin) -> None:
    _drop_standin()  # as in a process where nothing imported it yet (no autoload)
    backend = _backend()
    fresh = sys.modules["torch_neuronx"]
    assert fresh is not standin and fresh.STATE.neff_cache_at_import == backend.neff_cache.path
    assert backend.neff_cache.imported_before is False


OTHER_UID = 54321  # a user that is not this one (the tests run as root here, which may chown)


def _planted(folder: Path, mode: int, uid: int | None = None) -> Path:
    """`folder` as another user could leave it: a planted NEFF inside, the given mode and owner."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "planted.neff").write_bytes(b"NEFF from someone else")
    folder.chmod(mode)
    if uid is not None:
        os.chown(folder, uid, -1)
    return folder


@pytest.fixture
def own_cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """neuronexp's cache root for one test, in a shared place (as NEURONEXP_CACHE_DIR under /tmp would be)."""
    root = tmp_path / "shared" / "neuronexp"
    monkeypatch.setenv("NEURONEXP_CACHE_DIR", str(root))
    return root


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda root: _planted(root / "neff", 0o777, OTHER_UID), "is owned by uid 54321, not by this user"),
        (lambda root: _planted(root / "neff", 0o700, OTHER_UID), "is owned by uid 54321, not by this user"),
        (lambda root: _planted(root / "neff", 0o770), "is writable by its group (mode 770)"),
        (lambda root: _planted(root, 0o757), "is writable by others (mode 757)"),
    ],
    ids=["another-users-0777", "another-users-0700", "group-writable", "root-world-writable"],
)
def test_a_cache_folder_someone_else_can_write_is_refused_in_one_line(standin, own_cache_root: Path, make, problem):
    bad = make(own_cache_root)
    with pytest.raises(ConfigError) as refused:
        _backend()
    assert str(refused.value).startswith(f"NEURONEXP_CACHE_DIR={bad}: {problem}") and "\n" not in str(refused.value)
    assert VAR not in os.environ and standin.STATE.compiled == {}  # nothing compiled into it, nothing pinned
    cfg = neuron_config()
    cfg.backend = BackendName.neuron
    with pytest.raises(ConfigError, match=re.escape(f"NEURONEXP_CACHE_DIR={bad}: {problem}")):
        neuron_options(cfg)  # up front, when a run or sweep is planned: before any work


@pytest.mark.parametrize("linked", ["root", "neff"])
def test_a_link_anywhere_on_the_path_neuronexp_creates_is_refused(standin, own_cache_root: Path, linked: str):
    elsewhere = _planted(own_cache_root.parent / "elsewhere", 0o700)
    link = own_cache_root if linked == "root" else own_cache_root / "neff"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)
    with pytest.raises(ConfigError, match=f"NEURONEXP_CACHE_DIR={link}: is a symbolic link"):
        _backend()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["planted.neff"]  # nothing made through the link


def test_the_keys_folder_follows_the_same_rule(standin, tmp_path: Path) -> None:
    bad = _planted(tmp_path / "team-cache", 0o777)
    cfg = neuron_config(profiler=NeuronProfilerConfig(neff_cache_dir=str(bad)))
    cfg.backend = BackendName.neuron
    with pytest.raises(ConfigError, match=f"profiler.neuron.neff_cache_dir={bad}: is writable by others"):
        neuron_options(cfg)  # up front
    with pytest.raises(ConfigError, match=f"profiler.neuron.neff_cache_dir={bad}: is writable by others"):
        _backend(neff_cache_dir=str(bad))
    with pytest.raises(ConfigError, match="profiler.neuron.neff_cache_dir=.*: is writable by others"):
        _backend(neff_cache_dir=str(bad), copy_neffs=True)
    bad.chmod(0o700)
    assert _backend(neff_cache_dir=str(bad)).neff_cache.path == str(bad)  # its own and private: used as it is


def test_the_users_own_variable_is_left_as_torchneuron_would_use_it(standin, monkeypatch, tmp_path: Path) -> None:
    shared = _planted(tmp_path / "theirs", 0o777, OTHER_UID)
    monkeypatch.setenv(VAR, str(shared))
    assert _backend().neff_cache.path == str(shared)  # neuronexp chose nothing: docs/neuron.md says so


@pytest.mark.parametrize("standin", ["none"], indirect=True)
def test_a_backend_that_cannot_start_leaves_the_variable_as_it_was(standin, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        _backend(neff_cache_dir=str(tmp_path / "new"))
    assert VAR not in os.environ and not (tmp_path / "new").exists()


def test_a_capture_holding_other_cells_neffs_is_said(standin, explorer_in_process: Path, tmp_path: Path) -> None:
    """Two cells of one process share the NEFF cache; a runtime that copied the whole cache into the second cell's
    capture would bring the first cell's NEFFs: counted against the NEFFs the capture's executions ran."""
    from tests.backends.neuron.test_open_questions import _spec

    from neuronexp.cell.group import run_cell
    from neuronexp.modules import FusedRMSNorm

    (tmp_path / "a").mkdir()
    first = run_cell(_spec(), tmp_path / "a").cells.iloc[0]
    assert first["neuron_neffs_not_run"] == 0  # the capture holds its own four
    standin.STATE.switches.neff_copy = "cache"
    spec = _spec()
    config = dataclasses.replace(spec.config, module=handed(FusedRMSNorm(64)))
    fused = dataclasses.replace(spec, config=config, run_id="fused", module_name="rmsnorm_fused")
    (tmp_path / "b").mkdir()
    second = run_cell(fused, tmp_path / "b").cells.iloc[0]
    assert second["neuron_neff_files"] == 5 and second["neuron_neffs_not_run"] == 4  # naive's 4 beside its own 1
    assert (
        "4 NEFF(s) in the capture ran in no execution of it (1001, 1002, 1003): not this cell's (copied from the "
        "shared NEFF cache?); Neuron Explorer reads only those the NTFFs name"
    ) in second["warnings"].split(" | ")


PINNED = "NEURONEXP_NEFF_CACHE_PINNED"


@pytest.mark.parametrize("standin", ["none"], indirect=True)
def test_a_backend_that_cannot_start_puts_the_users_variable_back(standin, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, str(tmp_path / "mine"))
    monkeypatch.setenv(PINNED, "an earlier process's")
    with pytest.raises(ConfigError):
        _backend()
    assert os.environ[VAR] == str(tmp_path / "mine") and os.environ[PINNED] == "an earlier process's"
    assert not (tmp_path / "mine").exists()  # made for this cell, still empty: removed with the pin


@pytest.mark.parametrize("standin", ["none"], indirect=True)
def test_a_backend_that_cannot_start_keeps_a_folder_that_was_there(standin, tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir(mode=0o700)
    with pytest.raises(ConfigError):
        _backend(neff_cache_dir=str(tmp_path / "kept"))
    assert (tmp_path / "kept").is_dir() and VAR not in os.environ and PINNED not in os.environ


def test_a_file_where_a_cache_folder_goes_is_refused(standin, own_cache_root: Path) -> None:
    own_cache_root.mkdir(parents=True, mode=0o700)
    (own_cache_root / "neff").write_text("not a folder")
    with pytest.raises(ConfigError, match=f"^NEURONEXP_CACHE_DIR={own_cache_root / 'neff'}: is not a folder: "):
        _backend()


def test_the_version_folder_follows_the_rule_and_the_refusal_says_what_is_allowed(standin, own_cache_root: Path):
    bad = _planted(own_cache_root / "neff" / f"torch-neuronx-{standin.__version__}", 0o772)
    expected = (
        f"NEURONEXP_CACHE_DIR={bad}: is writable by others (mode 772): a NEFF is code the NeuronCore runs, so "
        "neuronexp keeps NEFFs only in folders of your own that no one else can write and no link leads to "
        "(chmod go-w, or choose another folder; docs/neuron.md)"
    )
    cfg = neuron_config()
    cfg.backend = BackendName.neuron
    for build in (lambda: neuron_options(cfg), _backend):  # planned, then pinned
        with pytest.raises(ConfigError) as refused:
            build()
        assert str(refused.value).startswith(expected)


def test_the_keys_missing_folders_are_made_private(standin, tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    assert _backend(neff_cache_dir=str(deep)).neff_cache.path == str(deep) == os.environ[VAR]
    for made in (tmp_path / "a", tmp_path / "a" / "b", deep):
        assert made.is_dir() and oct(made.stat().st_mode & 0o777) == "0o700"


def test_a_relative_or_home_key_is_made_absolute(standin, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _backend(neff_cache_dir="rel").neff_cache.path == str(tmp_path / "rel")
    assert _backend(neff_cache_dir="~/neff").neff_cache.path == str(tmp_path / "home" / "neff")


def test_the_users_variable_naming_the_keys_folder_needs_no_note(standin, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(VAR, str(tmp_path / "same"))
    backend = _backend(neff_cache_dir="~/same")
    assert backend.neff_cache.source == "TORCH_NEURONX_NEFF_CACHE_DIR" and backend.notes == []


def test_the_users_own_variable_is_not_checked_when_planned(standin, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, str(_planted(tmp_path / "theirs", 0o777, OTHER_UID)))
    cfg = neuron_config(profiler=NeuronProfilerConfig(neff_cache_dir=str(_planted(tmp_path / "key", 0o777))))
    cfg.backend = BackendName.neuron
    neuron_options(cfg)  # the variable wins: the key's folder is not used, so not refused


def _installed(site: Path, dist: str, version: str) -> None:
    """A distribution's metadata as pip leaves it, for importlib.metadata to find."""
    info = site / f"{dist.replace('-', '_')}-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")


def test_the_version_folder_names_both_installed_versions_in_safe_characters(standin, monkeypatch, tmp_path: Path):
    _installed(tmp_path / "site", "torch-neuronx", "2.13.3.0+abc")
    _installed(tmp_path / "site", "neuronx-cc", "2.21.0/../x y")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    expected = "torch-neuronx-2.13.3.0+abc_neuronx-cc-2.21.0_.._x_y"
    assert Path(_backend().neff_cache.path).name == expected


def test_without_metadata_the_loaded_modules_version_names_the_folder(standin, monkeypatch) -> None:
    monkeypatch.setattr(standin, "__version__", "2.13 rc/1")
    assert Path(_backend().neff_cache.path).name == "torch-neuronx-2.13_rc_1"
    _drop_standin()  # nothing imported and nothing installed: said so, not guessed
    assert Path(_backend().neff_cache.path).name == "torch-neuronx-unknown"


def test_a_keys_folder_under_a_shared_folder_is_its_own(standin, tmp_path: Path) -> None:
    """Folders above the cache are the user's to choose (docs/guarantees.md): a key under /tmp-like 0777 is fine."""
    shared = tmp_path / "open"
    shared.mkdir()
    shared.chmod(0o777)
    cfg = neuron_config(profiler=NeuronProfilerConfig(neff_cache_dir=str(shared / "me" / "neff")))
    cfg.backend = BackendName.neuron
    neuron_options(cfg)  # planned: only the key's own folder is under the rule
    assert _backend(neff_cache_dir=str(shared / "me" / "neff")).neff_cache.path == str(shared / "me" / "neff")


def test_the_users_variable_folder_is_made_private_and_the_autoload_recorded(standin, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(VAR, str(tmp_path / "a" / "b"))
    pinned = _backend().neff_cache
    assert pinned.path == str(tmp_path / "a" / "b") and pinned.imported_before is True  # the stand-in was imported
    made = tmp_path / "a" / "b"  # its parents as mkdir -p makes them; the cache itself this user's alone
    assert made.is_dir() and oct(made.stat().st_mode & 0o777) == "0o700"
