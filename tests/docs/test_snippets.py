"""Every `bash`, `python` and `yaml` block of README.md and docs/*.md, run as written (issue 34), one test per block,
in a fresh copy of a working directory holding what the blocks name (a real sweep, run and model run). `neuronexp`
lines run in-process as dry runs (sweep.dry_run=true: every cell planned and checked), the other console scripts
for real, Python as written. Lines this machine cannot run are tests of their own, skipped with the reason in their
id. Running the blocks is slow (the working directory alone is ~20 s of real runs); the checks that every line is
known and names no placeholder are not. docs/development.md says what runs how."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from helpers import FAST, REPO, run_cli, run_process

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TOOLS = {"neuronexp-report", "neuronexp-compare", "neuronexp-export", "neuronexp-extract"}

# What a line needs that this machine lacks, and the reason its test id gives.
CANNOT = (
    (r"^(pip |python3? -m venv )", "installs packages (docs/development.md measures it)"),
    (r"\bbackend=cuda\b", "needs a CUDA device"),
    (r"\bbackend=neuron\b|torch\.neuron\.|scripts/neuron_smoke\.py", "needs Trainium and torch-neuronx"),
    (r"hydra/launcher=slurm\b", "needs a Slurm cluster"),
    (r"(MLFLOW_TRACKING_URI=|--mlflow )https?://", "needs an MLflow tracking server"),
    (r"^python3? bench/", "a benchmark that measures for minutes (its figures are in the docs)"),
    (r"^python3? scripts/mutate\.py", "mutation testing: tens of minutes a module (docs/development.md measures it)"),
)
# What a line needs that an install may lack: the extra that brings it.
NEEDS = (
    (r"tiny_llama|llama_|hf_llama", "transformers", "needs transformers (pip install '.[hf]')"),
    (r"hydra/launcher=submitit_local", "hydra_plugins.hydra_submitit_launcher", "needs hydra-submitit-launcher"),
    (r"--mlflow|hydra/callbacks=mlflow", "mlflow", "needs mlflow (pip install '.[mlflow]')"),
)
# Known defects: the line is run, and expected to fail until the defect is fixed (strict: a fix turns it red).
DEFECTS: dict[str, str] = {}
PLACEHOLDER = re.compile(r"<[a-z][\w -]*>|\b(DIR|SWEEP|RUN_[AB]|NAME)\b")
# The names the docs give result directories: each is a copy of the small real sweep, or of the single run.
SWEEPS = ("outputs/study", "outputs/study2", "outputs/sweeps/before", "outputs/sweeps/after", "trn2_sweep")
SWEEPS += ("h200_sweep", "main_sweep", "branch_sweep", "main_1", "branch_1", "main_2", "branch_2")
RUNS = ("outputs/run",)
# docs/export.md's analyst snippets use SWEEP for a sweep directory: tests/export/test_analyst_path.py binds it.
ANALYST = ("docs/export.md", "## The analyst's path", "tests/export/test_analyst_path.py")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # of the opening fence
    lang: str
    text: str
    section: str  # the heading it is under

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def _blocks() -> list[Block]:
    found = []
    for path in DOCS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            before = text[: match.start()]
            headings = re.findall(r"^#{1,6} .*$", before, re.M)
            doc = str(path.relative_to(REPO))
            found.append(Block(doc, before.count("\n") + 1, match[1], match[2], headings[-1] if headings else ""))
    return found


def _lines(block: Block) -> list[tuple[int, str]]:
    """The block's command lines with their line numbers: continuations joined, comment-only lines dropped."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    for number, raw in enumerate(block.text.splitlines(), start=block.line + 1):
        parts.append(raw.removesuffix("\\").strip())
        if raw.endswith("\\"):
            continue
        line = " ".join(parts).strip()
        if line and not line.startswith("#"):
            out.append((number - len(parts) + 1, line))
        parts = []
    return out


def _cannot(line: str) -> str | None:
    for pattern, reason in CANNOT:
        if re.search(pattern, line):
            return reason
    for pattern, module, reason in NEEDS:
        if re.search(pattern, line) and not _importable(module):
            return reason
    return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def _program(line: str) -> str:
    words = [w for w in shlex.split(line, comments=True) if not re.fullmatch(r"[A-Z_]+=\S*", w)]
    return words[0] if words else ""


def _known(line: str) -> bool:
    return _program(line) in {"neuronexp", *TOOLS, "case"}


def _params() -> list:
    params = []
    for block in _blocks():
        if block.lang == "bash":
            lines = _lines(block)
            runnable = [(n, line) for n, line in lines if not _cannot(line)]
            params += [
                pytest.param(
                    block, [(n, line)], id=f"{block.doc}:{n} {_cannot(line)}", marks=pytest.mark.skip(_cannot(line))
                )
                for n, line in lines
                if _cannot(line)
            ]
            if runnable:
                params.append(pytest.param(block, runnable, id=block.where, marks=_marks(runnable)))
        elif block.lang == "python" and _analyst(block):
            reason = f"run by {ANALYST[2]} (SWEEP bound to a real sweep)"
            params.append(pytest.param(block, [], id=f"{block.where} {reason}", marks=pytest.mark.skip(reason)))
        elif block.lang in ("python", "yaml"):
            params.append(pytest.param(block, [], id=block.where, marks=_marks([])))
    return params


def _analyst(block: Block) -> bool:
    return block.doc == ANALYST[0] and block.section.startswith(ANALYST[1]) and "SWEEP" in block.text


def _marks(lines: list[tuple[int, str]]) -> list:
    marks = [pytest.mark.slow]
    for pattern, reason in DEFECTS.items():
        if any(re.search(pattern, line) for _, line in lines):
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
    return marks


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the docs' commands read, made once: experiments/, a small real sweep under every name the docs give one,
    a single run, and (with transformers) a real run of tiny_llama with profiler.modules=true as outputs/llama."""
    ws = tmp_path_factory.mktemp("docs-workspace")
    shutil.copytree(REPO / "experiments", ws / "experiments")
    fast = [a for a in FAST if not a.startswith("input.shape=")]
    sweep = ["-m", "module=rmsnorm_naive,rmsnorm_fused", "input.shape=[1,8,64],[1,16,64]", "baseline=rmsnorm_naive"]
    made = [run_cli([*sweep, *fast, f"hydra.sweep.dir={SWEEPS[0]}"], cwd=ws)]
    made.append(run_cli([*FAST, f"hydra.run.dir={RUNS[0]}"], cwd=ws))
    if importlib.util.find_spec("transformers"):
        llama = [
            "--config-dir",
            "experiments",
            "module=tiny_llama",
            "profiler.modules=true",
            "hydra.run.dir=outputs/llama",
        ]
        made.append(run_cli([*llama, *fast], cwd=ws))
    assert all(r.returncode == 0 for r in made), [r.stderr[-1500:] for r in made]
    for name in SWEEPS[1:]:
        shutil.copytree(ws / SWEEPS[0], ws / name)
    return ws


def _run_line(line: str, cwd: Path, previous: int) -> int:
    words = shlex.split(line, comments=True)
    env = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=\S*", w))
    program, *args = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)]
    if program == "case":  # shell around the line before: run by bash, with that line's exit status
        done = subprocess.run(["bash", "-c", f"(exit {previous}); {line}"], capture_output=True, text=True, cwd=cwd)
        assert done.stderr == "", f"{line!r}: {done.stderr}"
        return done.returncode
    # MLflow keeps one store per URI in a process (here: another test's file), so a line using one runs in a process.
    run = run_process if "sqlite:///" in line else run_cli
    if program == "neuronexp":
        before = _files(cwd)
        result = run([*args, "sweep.dry_run=true"], cwd=cwd, env=env)
        assert _files(cwd) == before, f"{line!r}: a dry run wrote {sorted(_files(cwd) - before)}"
        allowed = {0}
    else:
        result = run(args, cwd=cwd, script=program, env=env)
        # compare's documented exit statuses with --fail-on-*: 1 slower, 3 could not tell (copies of a noisy sweep)
        allowed = {0, 1, 3} if program == "neuronexp-compare" and "--fail-on-inconclusive" in args else {0}
    assert result.returncode in allowed, f"{line!r} exited {result.returncode}: {result.stderr[-1500:]}"
    assert ": error:" not in result.stderr, f"{line!r}: {result.stderr[-1500:]}"
    return result.returncode


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _run_python(block: Block, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(cwd)
    exec(compile(block.text, block.where, "exec"), {"__name__": "__snippet__"})


def _run_yaml(block: Block, cwd: Path) -> None:
    """A block whose first line names a file is that file (its YAML parsed alike); any other block's lines are
    config lines, each composed by a dry run as `key=value`."""
    first = block.text.splitlines()[0]
    named = REPO / first.lstrip("# ").strip()
    if first.startswith("# ") and named.is_file():
        assert yaml.safe_load(block.text) == yaml.safe_load(named.read_text()), f"{block.where} is not {named}"
        return
    for line in block.text.splitlines():
        key, value = line.split("#")[0].split(":", 1)
        _run_line(shlex.join(["neuronexp", f"{key.strip()}={value.strip()}"]), cwd, 0)


@pytest.mark.parametrize(("block", "lines"), _params())
def test_the_block_runs_as_written(
    block: Block, lines: list[tuple[int, str]], workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "ws"
    shutil.copytree(workspace, cwd)
    if block.lang == "python":
        _run_python(block, cwd, monkeypatch)
    elif block.lang == "yaml":
        _run_yaml(block, cwd)
    previous = 0
    for _, line in lines:
        previous = _run_line(line, cwd, previous)


def test_every_command_line_is_run_or_says_why_not() -> None:
    unknown = [
        f"{b.doc}:{n} {line}"
        for b in _blocks()
        if b.lang == "bash"
        for n, line in _lines(b)
        if not _cannot(line) and not _known(line)
    ]
    assert not unknown, f"command lines this test neither runs nor skips with a reason (add a rule): {unknown}"


def test_no_runnable_line_names_a_placeholder() -> None:
    named = [
        f"{b.doc}:{n} {line}"
        for b in _blocks()
        if b.lang == "bash"
        for n, line in _lines(b)
        if not _cannot(line) and PLACEHOLDER.search(line)
    ]
    python = [b.where for b in _blocks() if b.lang == "python" and "SWEEP" in b.text and not _analyst(b)]
    assert not named, f"lines with a placeholder instead of a real path: {named}"
    assert not python, f"python blocks using SWEEP outside {ANALYST[0]}'s analyst section: {python}"


def test_a_command_block_is_labelled() -> None:
    """An unlabelled block is output and is not run: one that starts with a command would escape the tests."""
    command = re.compile(r"^(neuronexp-\w+ |neuronexp (-|\+|[\w.]+=)|python3? |pip )")
    unlabelled = [b.where for b in _blocks() if not b.lang and command.match(b.text)]
    assert not unlabelled, f"command blocks without a language (```bash): {unlabelled}"


def test_the_readme_is_a_front_door() -> None:
    """At most 150 lines; two commands first (install and the study, the tests); the study's table is the first
    output block, with its findings."""
    readme = (REPO / "README.md").read_text()
    blocks = [b for b in _blocks() if b.doc == "README.md"]
    assert len(readme.splitlines()) <= 150
    first = blocks[0].text.splitlines()
    assert len(first) == 2 and first[0].endswith("neuronexp +experiment=rmsnorm_sweep"), first
    assert first[1].endswith("python -m pytest -q")
    # CI runs the README's test command as written (.ci/run).
    assert "\npython -m pytest -q\n" in (REPO / ".ci" / "run").read_text()
    output = next(b for b in blocks if not b.lang)
    assert "neuronexp sweep · 12 cells" in output.text and "fastest" in output.text
