"""Mutation testing of the modules a change touches: mutmut over each named module, judged by the tests of the
README's default run (its markers: `slow` and `slurm` left out) that reach the mutated function.

    python scripts/mutate.py src/neuronexp/results/owned.py [more modules] [--tests tests/cli/test_extract.py ...]

It copies the working tree (tracked and untracked files, uncommitted edits included) into `.mutate/tree` (git-ignored,
made anew each run, never inside a results directory), writes mutmut's settings into that copy's pyproject.toml and
runs `mutmut run` there. The tests whose reach is measured are the module's area (`tests/<subpackage>/`, or
`tests/<name>/` for a top-level module) and every test file that names the module; `--tests` adds more (`--only`:
those alone), `--all-tests` takes the whole default run. mutmut then runs, per mutant, only the tests that reached its
function, in one process (`-n 0`). The mutated copy is what every process of a test imports: PYTHONPATH names it
first, so a console script or the fork server's template started by a test imports the mutant too, and the functions
such a process reaches count for the test that started it (scripts/mutate_hooks). The score per module is mutmut's:
killed (and timed out) over all mutants; a mutant no test reached counts as a survivor. Survivors are listed with
their diffs (`--show`), to be killed by a test or explained; `--again` judges only them again, after new tests.
docs/development.md ("Mutation testing") says how long it takes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / ".mutate"
MARK = "made by scripts/mutate.py\n"
DETECTED = {1, 3, 36, -24, 24, 152, 255}  # mutmut's "killed" and "timeout" exit codes (mutmut.stats)
STATUS = {0: "survived", 33: "no tests", 5: "no tests", 34: "skipped", -11: "segfault", -9: "segfault"}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    modules = [Path(m).resolve().relative_to(REPO) for m in args.modules]
    for module in modules:
        if module.suffix != ".py" or not (REPO / module).is_file() or module.parts[0] != "src":
            print(f"scripts/mutate.py: {module} is not a Python module under src/", file=sys.stderr)
            return 2
    names: list[str] = []
    if args.again:  # the same tree, its files refreshed; only the mutants that survived, judged again
        tree = WORK / "tree"
        if not (WORK / "MADE_BY").is_file() or not tree.is_dir():
            sys.exit("scripts/mutate.py: --again needs an earlier run's .mutate/tree")
        copy_tree(tree)
        names = [k for m in modules for k, code in codes(tree, m).items() if code not in DETECTED and code != 34]
        print(f"judging again the {len(names)} mutants that survived", flush=True)
    else:
        tree = fresh_tree()
        area = [] if args.only else [t for m in modules for t in area_tests(m)]
        tests = sorted({*args.tests, *area}) if not args.all_tests else ["tests"]
        write_settings(tree, modules, tests)
        print(f"mutating {', '.join(map(str, modules))}; tests reaching them among: {' '.join(tests)}", flush=True)
        # Made before Python starts: a PYTHONPATH folder missing at start-up is cached as absent, and the tests
        # would import the unmutated package.
        (tree / "mutants" / "src").mkdir(parents=True)
    hits = WORK / "hits"
    hits.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree / "mutants" / "src"), str(REPO / "scripts" / "mutate_hooks")]),
        "MUTATE_HITS_DIR": str(hits),
    }
    jobs = ["--max-children", str(args.jobs)] if args.jobs else []
    if args.again and not names:
        return report(tree, modules, env, show=args.show)
    subprocess.run([sys.executable, "-m", "mutmut", "run", *jobs, *names], cwd=tree, env=env, check=False)
    return report(tree, modules, env, show=args.show)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="src/neuronexp/... .py files to mutate")
    parser.add_argument("--tests", nargs="*", default=[], help="more test files or folders whose reach counts")
    parser.add_argument("--all-tests", action="store_true", help="the whole default run (slower)")
    parser.add_argument("--only", action="store_true", help="only the --tests given, not the modules' areas")
    parser.add_argument("--jobs", type=int, default=0, help="mutants at once (default: one per CPU)")
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    parser.add_argument(
        "--again", action="store_true", help="after new tests: judge only the last run's survivors again, same tree"
    )
    return parser.parse_args(argv)


def fresh_tree() -> Path:
    """`.mutate/tree`: a copy of the working tree, made anew (only a `.mutate` this script made is removed)."""
    if WORK.exists():
        if not (WORK / "MADE_BY").is_file() or (WORK / "MADE_BY").read_text() != MARK:
            sys.exit(f"scripts/mutate.py: {WORK} exists and was not made by this script; move it away")
        shutil.rmtree(WORK)
    tree = WORK / "tree"
    tree.mkdir(parents=True)
    (WORK / "MADE_BY").write_text(MARK)
    copy_tree(tree)
    return tree


def copy_tree(tree: Path) -> None:
    """The working tree's files (tracked and untracked, not ignored) copied into `tree`, over what is there."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = REPO / name, tree / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            if not target.is_symlink():
                target.symlink_to(os.readlink(source))
        elif name != "pyproject.toml" or not target.exists():  # the copy's holds mutmut's settings
            shutil.copy2(source, target)
            if name.startswith("tests/"):  # what mutmut's run reads (its also_copy is copied once)
                (tree / "mutants" / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tree / "mutants" / name)


def codes(tree: Path, module: Path) -> dict[str, int | None]:
    """mutmut's verdict per mutant of `module` (its exit code), from its record."""
    meta = tree / "mutants" / f"{module}.meta"
    return json.loads(meta.read_text())["exit_code_by_key"] if meta.is_file() else {}


def area_tests(module: Path) -> list[str]:
    """tests/<subpackage>/ (tests/<name>/ for a top-level module such as api.py) and the test files that name it."""
    parts = module.with_suffix("").parts[2:]  # src/neuronexp/<sub>/<name>.py -> (<sub>, <name>)
    area = REPO / "tests" / parts[0]
    found = [str(area.relative_to(REPO))] if area.is_dir() else []
    dotted = ".".join(parts)
    names = (f"neuronexp.{dotted}", f"from neuronexp.{'.'.join(parts[:-1])} import {parts[-1]}")
    for test in sorted((REPO / "tests").rglob("test_*.py")):
        text = test.read_text()
        if any(n in text for n in names) and not str(test.relative_to(REPO)).startswith(tuple(found)):
            found.append(str(test.relative_to(REPO)))
    return found


def write_settings(tree: Path, modules: list[Path], tests: list[str]) -> None:
    """mutmut's settings, appended to the copy's pyproject.toml (the repository's own is left as it is)."""
    top = sorted(p.name for p in tree.iterdir() if p.name not in {"src", "tests", "pyproject.toml"})
    settings = {
        "source_paths": ["src"],
        "only_mutate": [str(m) for m in modules],
        # The configs link (src/neuronexp/conf -> conf) is not followed by mutmut's copy of src/; the rest of the
        # tree is what the tests read (docs, conf, experiments, bench, ...).
        "also_copy": ["src/neuronexp/conf", *top],
        # One process per mutant (no pytest-xdist); the default run's markers stay (pyproject.toml's addopts).
        "pytest_add_cli_args": ["-n", "0", "-p", "no:cacheprovider", "-p", "mutate_hits", "-W", "ignore"],
        "pytest_add_cli_args_test_selection": tests,
        # The suite imports torch and forks: mutmut forks its workers from a server free of the test session.
        "process_isolation": "forkserver",
        "use_git_change_detection": False,
        # A wall-clock limit of (the tests' time + 30 s) x 3: a pytest session's set-up (the fork server's template
        # importing torch) is not in the tests' time, and takes tens of seconds on a loaded 2-core VM.
        "timeout_constant": 30.0,
        "timeout_multiplier": 3.0,
    }
    lines = ["", "[tool.mutmut]", *(f"{key} = {json.dumps(value)}" for key, value in settings.items())]
    with open(tree / "pyproject.toml", "a") as f:
        f.write("\n".join(lines) + "\n")


def report(tree: Path, modules: list[Path], env: dict[str, str], show: bool) -> int:
    """The score per module, and its survivors; exit status 0 when every module scores >= 90%."""
    worst = 100.0
    for module in modules:
        found = codes(tree, module)
        if not found:
            print(f"{module}: no mutants recorded (mutmut failed before running them: see its output above)")
            return 1
        judged = {k: v for k, v in found.items() if v != 34}
        detected = [k for k, v in judged.items() if v in DETECTED]
        score = 100.0 * len(detected) / len(judged) if judged else 100.0
        worst = min(worst, score)
        print(f"\n{module}: {len(detected)} of {len(judged)} mutants killed, score {score:.1f}%")
        for key, code in sorted(judged.items()):
            if code not in DETECTED:
                print(f"  {STATUS.get(code, f'exit {code}')}: {key}")
                if show:
                    diff = subprocess.run(
                        [sys.executable, "-m", "mutmut", "show", key], cwd=tree, env=env, capture_output=True, text=True
                    )
                    print("    " + diff.stdout.replace("\n", "\n    "))
    return 0 if worst >= 90.0 else 1


if __name__ == "__main__":
    sys.exit(main())
