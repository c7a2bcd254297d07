"""Python 3.14's argparse check of help strings (hydra#3121), reproduced on any Python: argparse 3.14 checks each
argument's help as it is added (ArgumentParser._check_help, copied here as 3.14 writes it), and every released Hydra
adds --shell-completion with a help object that is no string, so `hydra.main` dies building its parser. neuronexp
builds it inside engine._hydra.hydra_parser_on_python_314, and starts."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

import pytest

from neuronexp.engine import _hydra


def _check_help_as_in_python_314(self: Any, action: argparse.Action) -> None:
    if action.help and hasattr(self, "_get_formatter"):
        formatter = self._get_formatter()
        try:
            formatter._expand_help(action)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError("badly formed help string") from exc


@pytest.fixture
def argparse_314(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse as Python 3.14 behaves: the check, called by add_argument for every argument it adds."""
    monkeypatch.setattr(argparse.ArgumentParser, "_check_help", _check_help_as_in_python_314, raising=False)
    add = argparse._ActionsContainer.add_argument

    def add_argument(self: Any, *args: Any, **kwargs: Any) -> argparse.Action:
        action = add(self, *args, **kwargs)
        if (check := getattr(self, "_check_help", None)) is not None:
            check(action)
        return action

    monkeypatch.setattr(argparse._ActionsContainer, "add_argument", add_argument)


def test_hydras_own_parser_fails_the_314_check_as_reported(argparse_314: None) -> None:
    from hydra._internal.utils import get_args_parser

    with pytest.raises(ValueError, match="badly formed help string"):
        get_args_parser()
    with _hydra.hydra_parser_on_python_314():
        assert get_args_parser().parse_args(["--cfg", "job"]).cfg == "job"
    with pytest.raises(ValueError, match="badly formed help string"):  # put back afterwards
        get_args_parser()


def test_a_bad_help_string_is_still_refused_inside(argparse_314: None) -> None:
    with _hydra.hydra_parser_on_python_314(), pytest.raises(ValueError, match="badly formed help string"):
        argparse.ArgumentParser().add_argument("--x", help="%(nonsense)d")


def test_neuronexp_starts_under_the_314_check(argparse_314: None, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    res = cli("--cfg", "job")
    assert res.returncode == 0 and "module:" in res.stdout, res.stderr
    monkeypatch.setattr(_hydra, "hydra_parser_on_python_314", contextlib.nullcontext)  # without the workaround:
    with pytest.raises(ValueError, match="badly formed help string"):  # the traceback a 3.14 user would get
        cli("--cfg", "job")
