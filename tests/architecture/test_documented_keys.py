"""Every configuration key and command-line flag that the README and docs/ name is a real one, every key of the
schema is documented, and every key and flag is set by at least one test.

"Set by a test" is checked by text: a test file holds the key as an override (`timing.rounds=`, `input.kwargs.x=`)
or the flag as a string (`"--top"`). It guards against a new key or flag arriving untested; that each of those
tests would fail were the feature broken was checked once by breaking it (issue 18). Keys a test can only set
through the schema's dataclasses (a Neuron option read by the stand-in) are listed below with the file that does.
The benchmark scripts' flags (bench/) are checked to exist, not exercised: those scripts measure, on purpose, for
minutes; their figures are in docs/.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from helpers import REPO
from neuronexp.cli import compare as compare_cli
from neuronexp.cli import export as export_cli
from neuronexp.cli import extract as extract_cli
from neuronexp.cli import report as report_cli
from neuronexp.config.schema import RunConfig

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TESTS = [p for p in (REPO / "tests").rglob("*.py") if p.name != Path(__file__).name]
# The schema's nodes (input, timing, noise, ...): a new one is audited as soon as it exists.
SECTIONS = tuple(
    f.name
    for f in dataclasses.fields(RunConfig)
    if f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory())
)

# Keys whose tests set them through the schema's dataclasses rather than as an override, and where.
SET_THROUGH_DATACLASSES = {
    "input.extra": "tests/config/test_inputs.py",  # only ever an error: renamed to input.args
    "profiler.neuron.copy_neffs": "tests/backends/neuron/test_backend.py",
    "profiler.neuron.explorer": "tests/backends/neuron/test_explorer.py",
}
# Misspelt on purpose in the docs, as the example of a mistake neuronexp refuses.
MISTAKES_SHOWN = {"timing.itres"}
# Flags of other programs the docs quote: Hydra's own, pip, pytest, Slurm, nvidia-smi, neuron-explorer, torch.compile.
OTHER_PROGRAMS = {
    "--cfg",
    "--config-dir",
    "--help",
    "--extra-index-url",
    "--index-url",
    "--collect-only",
    "--cpus-per-task",
    "--exclusive",
    "--purge",
    "--query-gpu",
    "--output-format",
    "--ignore-device-profile",
    "--ignore-system-profile",
    "--show-profile-schema",
    "--system-trace-filter-neuron-core",
    "--output-file",  # neuron-explorer view's
    "--shell-completion",  # Hydra's (hydra#3121, docs/neuron.md)
    "--auto-cast",
}


def _schema_keys(cls: type = RunConfig, prefix: str = "") -> list[str]:
    keys = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        keys += (
            _schema_keys(type(default), f"{prefix}{f.name}.")
            if dataclasses.is_dataclass(default)
            else [prefix + f.name]
        )
    return keys


def _code(text: str) -> str:
    """The README's or a doc's code: fenced blocks and inline spans (where keys and flags are written)."""
    return "\n".join(re.findall(r"```.*?```", text, re.S) + re.findall(r"`([^`\n]+)`", text))


def _expand(key: str) -> list[str]:
    """`timing.{rounds,round_gap_s}` → timing.rounds, timing.round_gap_s."""
    match = re.fullmatch(r"(.*)\{([\w,]+)\}(.*)", key)
    return [match[1] + part + match[3] for part in match[2].split(",")] if match else [key]


def _documented_keys() -> dict[str, str]:
    found = {}
    pattern = re.compile(r"(?<![\w./$-])((?:" + "|".join(SECTIONS) + r")\.[\w.]*(?:\{[\w,]+\})?)")
    for doc in DOCS:
        for raw in pattern.findall(_code(doc.read_text())):
            for key in _expand(raw.rstrip(".")):
                found.setdefault(key, doc.name)
    return found


TEST_TEXT = "\n".join(p.read_text() for p in TESTS)
SCHEMA_KEYS = _schema_keys()
NODES = {k.rsplit(".", i)[0] for k in SCHEMA_KEYS for i in range(1, k.count(".") + 1)}


def test_every_documented_key_is_a_key_of_the_schema() -> None:
    unknown = {
        key: doc
        for key, doc in _documented_keys().items()
        if key not in SCHEMA_KEYS
        and key not in NODES
        and key not in MISTAKES_SHOWN
        and not key.startswith(("input.args.", "input.kwargs.", "input.shape[", "module."))
    }
    assert not unknown, f"keys the docs name that the schema does not have: {unknown}"


def test_every_key_of_the_schema_is_documented() -> None:
    documented = set(_documented_keys()) | {m for doc in DOCS for m in re.findall(r"`(\w+)`", doc.read_text())}
    missing = [k for k in SCHEMA_KEYS if k not in documented]
    assert not missing, f"keys in the schema that neither the README nor docs/ name: {missing}"


def _set_by_a_test(key: str) -> bool:
    if key in SET_THROUGH_DATACLASSES:
        where = REPO / SET_THROUGH_DATACLASSES[key]
        return bool(re.search(rf"\b{key.rsplit('.', 1)[1]}\b", where.read_text()))
    return bool(re.search(r"(?<![\w.])[~+]*" + re.escape(key) + r"(?:=|\.\w)", TEST_TEXT))


def test_every_key_is_set_by_a_test() -> None:
    untested = [key for key in SCHEMA_KEYS if not _set_by_a_test(key)]
    assert not untested, f"keys no test sets (as `key=...`, or through the dataclass where listed): {untested}"


def _flags(parser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings if s.startswith("--") and s != "--help"}


def _script_flags(path: Path) -> set[str]:
    return set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", path.read_text()))


COMMAND_FLAGS = {
    "neuronexp-report": _flags(report_cli._parser()),
    "neuronexp-compare": _flags(compare_cli._parser()),
    "neuronexp-export": _flags(export_cli._parser()),
    "neuronexp-extract": _flags(extract_cli._parser()),
    "scripts/neuron_smoke.py": _script_flags(REPO / "scripts" / "neuron_smoke.py"),
    "scripts/mutate.py": _script_flags(REPO / "scripts" / "mutate.py"),
}


def test_every_flag_is_used_by_a_test() -> None:
    unused = sorted(
        f"{command} {flag}"
        for command, flags in COMMAND_FLAGS.items()
        for flag in flags
        if f'"{flag}"' not in TEST_TEXT
    )
    assert not unused, f"flags no test passes: {unused}"


def test_every_documented_flag_exists() -> None:
    bench = set().union(*(_script_flags(p) for p in (REPO / "bench").glob("*.py")))
    known = set().union(*COMMAND_FLAGS.values()) | bench | OTHER_PROGRAMS
    documented = {
        (flag, doc.name) for doc in DOCS for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", _code(doc.read_text()))
    }
    unknown = sorted((flag, doc) for flag, doc in documented if flag not in known)
    assert not unknown, f"flags the docs name that no neuronexp command, script or benchmark has: {unknown}"


# docs/configuration.md: the reference table, checked against the schema and the composed default configuration.
REFERENCE = REPO / "docs" / "configuration.md"
ROW = re.compile(r"^\| `([^`]+)` \| (`[^`]*`|none) \|", re.M)


def _reference_rows() -> dict[str, str]:
    """First column → default column of every table row in docs/configuration.md."""
    rows: dict[str, str] = {}
    for key, default in ROW.findall(REFERENCE.read_text()):
        assert key not in rows, f"docs/configuration.md lists {key} twice"
        rows[key] = default.strip("`")
    return rows


def _composed_default() -> tuple[dict, dict]:
    """The default configuration as neuronexp composes it (values resolved), and Hydra's group choices."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf, open_dict

    import neuronexp.config.compose  # noqa: F401 (registers the nx.* resolvers the defaults use)

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("neuronexp.conf", version_base="1.3"):
            cfg = compose("config", return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    choices = dict(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]  # its own interpolations resolve only inside a run
    return OmegaConf.to_container(cfg, resolve=True), choices


def _retired(key: str) -> bool:
    """A schema field kept only to refuse its old name (metadata retired=True)."""
    cls: type = RunConfig
    for part in key.split("."):
        f = {f.name: f for f in dataclasses.fields(cls)}[part]
        if f.metadata.get("retired"):
            return True
        if f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory()):
            cls = type(f.default_factory())
    return False


GROUPS = {"module", "profiler", "shapes", "experiment", "hydra/launcher", "hydra/callbacks"}


def test_the_configuration_reference_lists_every_key_of_the_schema_and_no_other() -> None:
    rows = set(_reference_rows()) - GROUPS
    missing = [k for k in SCHEMA_KEYS if k not in rows and k != "module" and not _retired(k)]
    unknown = sorted(rows - set(SCHEMA_KEYS))
    assert not missing, f"schema keys docs/configuration.md does not list: {missing}"
    assert not unknown, f"keys docs/configuration.md lists that the schema does not have: {unknown}"


def test_the_configuration_reference_gives_the_composed_defaults() -> None:
    import yaml

    composed, _ = _composed_default()
    wrong = {}
    for key, default in _reference_rows().items():
        if key in GROUPS:
            continue
        value = composed
        for part in key.split("."):
            value = value[part]
        if yaml.safe_load(default) != value:
            wrong[key] = (default, value)
    assert not wrong, f"defaults docs/configuration.md gives (doc, composed): {wrong}"


def test_the_configuration_reference_names_each_group_default_and_option() -> None:
    _, choices = _composed_default()
    text = {
        line.split("|")[1].strip().strip("`"): line
        for line in REFERENCE.read_text().splitlines()
        if line.startswith("| `")
    }
    rows = _reference_rows()
    assert GROUPS <= set(rows), f"groups docs/configuration.md does not list: {GROUPS - set(rows)}"
    for group in GROUPS:
        expected = "none" if group not in choices else ("null" if choices[group] is None else choices[group])
        assert rows[group] == expected, f"{group}: the reference says {rows[group]}, Hydra composes {expected}"
        options = {p.stem for p in (REPO / "conf" / group).glob("*.yaml")}
        assert options, f"conf/{group} has no options"
        unnamed = sorted(o for o in options if f"`{o}`" not in text[group])
        assert not unnamed, f"{group} options docs/configuration.md does not name: {unnamed}"
