"""Loaded at the start of every Python process of a mutation run (scripts/mutate.py puts this folder on PYTHONPATH).

While mutmut collects which tests reach which function (MUTANT_UNDER_TEST=stats), a function reached in a process
the test started (the fork server's template, a cell process, a console script) is recorded in that process's memory
and lost. Here, in every process, each function reached is also appended to a file of MUTATE_HITS_DIR, which
mutate_hits (a pytest plugin) adds to the test that ran, so a mutant of code that runs only in a child is judged by
the tests that reach it, not reported as having none.
"""

import os


def _record_hits_in_files() -> None:
    hits_dir = os.environ.get("MUTATE_HITS_DIR")
    if not hits_dir or os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    import mutmut.mutation.trampoline as trampoline

    recorded = trampoline.record_trampoline_hit
    seen: set[str] = set()
    os.register_at_fork(after_in_child=seen.clear)

    def record(name: str, caller: str | None = None) -> None:
        if name not in seen:
            seen.add(name)
            with open(os.path.join(hits_dir, str(os.getpid())), "a") as f:
                f.write(name + "\n")
        try:
            recorded(name, caller)
        except Exception:  # noqa: S110 - mutmut's own record needs its config, found from the cwd: a child's may differ
            pass

    trampoline.record_trampoline_hit = record


_record_hits_in_files()
