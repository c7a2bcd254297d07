"""The module node against its constructor's signature, when the cell is planned (config.validate): a typo in a
constructor argument is one line naming it, before any file is written; a class taking **kwargs accepts anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from torch import nn

from helpers import FAST
from neuronexp.config import ConfigError
from neuronexp.config.validate import check_constructor


class Block(nn.Module):
    def __init__(self, hidden: int, expansion: int = 4, *, bias: bool = True) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden, hidden * expansion, bias=bias)


class Open(nn.Module):
    def __init__(self, hidden: int, **options: Any) -> None:
        super().__init__()


def make_block(hidden: int, config: dict[str, Any] | None = None) -> nn.Module:
    return Block(hidden)


HERE = f"{__name__}"


@pytest.mark.parametrize(
    "node, key, value, why",
    [
        (
            {"hidden": 8, "expansoin": 2},
            "module.expansoin",
            2,
            "not an argument of Block(hidden, expansion=4, *, bias=True)",
        ),
        ({"expansion": 2}, "module.hidden", "(missing)", "Block(hidden, expansion=4, *, bias=True) needs hidden"),
        ({"_args_": [8, 2, 3]}, "module._args_", [8, 2, 3], "takes 2 positional argument(s)"),
    ],
)
def test_a_key_the_constructor_does_not_take_is_named_with_its_value(
    node: dict[str, Any], key: str, value: Any, why: str
) -> None:
    with pytest.raises(ConfigError) as err:
        check_constructor({"_target_": f"{HERE}.Block", **node})
    assert (err.value.key, err.value.value) == (key, value)
    assert why in str(err.value)


def test_what_the_constructor_takes_passes() -> None:
    check_constructor({"_target_": f"{HERE}.Block", "hidden": 8, "bias": False})
    check_constructor({"_target_": f"{HERE}.Block", "_args_": [8, 2]})
    check_constructor({"_target_": f"{HERE}.Block", "_partial_": True})  # the rest given later
    check_constructor({"_target_": f"{HERE}.Open", "hidden": 8, "anything": 1})  # **kwargs takes any key


def test_nested_targets_are_checked_unless_not_built_recursively() -> None:
    inner = {"_target_": f"{HERE}.Block", "hidden": 8, "widht": 2}
    with pytest.raises(ConfigError, match=r"^module\.config\.widht=2: not an argument of Block"):
        check_constructor({"_target_": f"{HERE}.make_block", "hidden": 8, "config": inner})
    check_constructor({"_target_": f"{HERE}.make_block", "hidden": 8, "config": inner, "_recursive_": False})


def test_a_layer_whose_init_a_decorator_hides_is_checked_against_that_init() -> None:
    # transformers 5.25 wraps its layers' __init__ in one taking *args and **kwargs, without functools.wraps
    # (helpers.layers.HiddenInit does the same): the typo is still found, against the __init__ the decorator calls.
    with pytest.raises(ConfigError) as err:
        check_constructor({"_target_": "helpers.layers.HiddenInit", "hidden_size": 8, "espilon": 1e-5})
    assert (err.value.key, err.value.value) == ("module.espilon", 1e-5)
    assert "not an argument of HiddenInit(hidden_size, eps=1e-06)" in str(err.value)
    check_constructor({"_target_": "helpers.layers.HiddenInit", "hidden_size": 8, "eps": 1e-5})


def test_hugging_face_configs_take_keys_their_wrapped_signature_does_not_show() -> None:
    transformers = pytest.importorskip("transformers")
    node = {"_target_": "transformers.LlamaConfig", "hidden_size": 64, "attn_implementation": "sdpa"}
    check_constructor({"_target_": f"{HERE}.make_block", "hidden": 8, "config": node})
    assert transformers.LlamaConfig(attn_implementation="sdpa")  # its __init__ takes **kwargs; what it wraps does not


def test_a_constructor_typo_fails_in_one_line_before_any_file_is_written(cli, tmp_path: Path) -> None:
    result = cli("+module.expansoin=4", "backend=cpu", *FAST)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip() == (
        "neuronexp: error: module.expansoin=4: not an argument of NaiveRMSNorm(hidden_size, eps=1e-06)"
    )
    assert not (tmp_path / "outputs").exists()


def _hide(init):  # a decorator without functools.wraps, its wrapper not named __init__
    def wrapper(self, *args, **kwargs):
        return init(self, *args, **kwargs)

    return wrapper


def _hide_with_helper(init):  # the closure holds another function too: not the constructor
    def helper(hidden: int, anything: int = 0) -> None: ...

    def wrapper(self, *args, **kwargs):
        helper(1)
        return init(self, *args, **kwargs)

    return wrapper


class TwoWrappers(nn.Module):
    @_hide
    @_hide
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


class FourWrappers(nn.Module):
    @_hide
    @_hide
    @_hide
    @_hide
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


class WithHelper(nn.Module):
    @_hide_with_helper
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


class OnlyArgs(nn.Module):
    def __init__(self, *sizes: int) -> None:
        super().__init__()


@pytest.mark.parametrize("layer", ["TwoWrappers", "FourWrappers", "WithHelper"])
def test_the_init_behind_stacked_wrappers_is_found_and_no_other_function_is_taken_for_it(layer: str) -> None:
    """Issue 44: the lookup went one decorator deep, took any function of the closure for the constructor, and two
    stacked wrappers not named __init__ hid it, so a typo passed."""
    with pytest.raises(ConfigError) as err:
        check_constructor({"_target_": f"{HERE}.{layer}", "hidden": 8, "espilon": 1e-5})
    assert f"not an argument of {layer}(hidden, eps=1e-06)" in str(err.value)
    check_constructor({"_target_": f"{HERE}.{layer}", "hidden": 8, "eps": 1e-5})
    with pytest.raises(ConfigError, match=r"^module\.hidden=\(missing\)"):
        check_constructor({"_target_": f"{HERE}.{layer}"})


def test_five_wrappers_are_past_the_lookup_and_take_anything() -> None:
    """Beyond MAX_WRAPPERS the constructor stays hidden: what (*args, **kwargs) takes, anything, is accepted."""
    from neuronexp.config.targets import MAX_WRAPPERS, hidden_init

    init = FourWrappers.__init__
    deeper = type("FiveWrappers", (nn.Module,), {"__init__": _hide(init)})
    assert MAX_WRAPPERS == 4 and hidden_init(FourWrappers) is not None and hidden_init(deeper) is None
    check_constructor({"_target_": f"{HERE}.Open", "hidden": 8, "anything": 1})


def test_a_constructor_with_args_but_no_kwargs_takes_no_key() -> None:
    with pytest.raises(ConfigError, match=r"^module\.width=8: not an argument of OnlyArgs\(\*sizes\)"):
        check_constructor({"_target_": f"{HERE}.OnlyArgs", "width": 8})
    check_constructor({"_target_": f"{HERE}.OnlyArgs", "_args_": [1, 2, 3]})


def _hide_as_init(init):  # the wrapper named __init__ too, and a value beside the function in its closure
    flag = 3

    def __init__(self, *args, **kwargs):  # noqa: N807 - named as transformers' wrappers are
        assert flag == 3
        return init(self, *args, **kwargs)

    return __init__


def test_wrappers_named_init_are_looked_through_and_the_lookup_stops_at_its_depth() -> None:
    from neuronexp.config.targets import hidden_init

    def real(self, hidden: int, **options: Any) -> None:
        nn.Module.__init__(self)

    real.__name__ = "__init__"
    four, five = real, real
    for _ in range(4):
        four = _hide_as_init(four)
    for _ in range(5):
        five = _hide_as_init(five)
    assert hidden_init(type("Four", (nn.Module,), {"__init__": four})) is real  # takes **options: found all the same
    assert hidden_init(type("Five", (nn.Module,), {"__init__": five})) is None  # past the lookup: not an opaque one


@pytest.mark.parametrize(
    "node",
    [
        {"_target_": "builtins.dict", "kw": {"a": [1, {"b": 2}]}, "n": {"_target_": "builtins.len", "_args_": [[1]]}},
        {"_target_": "builtins.dict", "_recursive_": False, "inner": {"_target_": "builtins.len", "_args_": [[1]]}},
        {"_target_": "builtins.dict", "_partial_": True, "_args_": [[["b", 2]]], "a": 1},
        {"_target_": dict, "a": [{"_target_": "builtins.len", "_args_": ["ab"]}]},  # a callable, not its path
    ],
)
def test_the_cell_builds_a_node_as_hydras_instantiate_builds_it(node: dict[str, Any]) -> None:
    """The cell process builds its module without Hydra (config.targets.instantiate): what it builds is what
    hydra.utils.instantiate(node, _convert_="all") builds, nested targets, `_args_`, `_recursive_`, `_partial_`."""
    from hydra.utils import instantiate as hydra_instantiate

    from neuronexp.config.targets import instantiate

    built, expected = instantiate(node), hydra_instantiate(node, _convert_="all")
    if node.get("_partial_"):
        built, expected = built(c=3), expected(c=3)
    assert built == expected and type(built) is dict


def test_a_layer_given_positional_arguments_is_built_with_them() -> None:
    from neuronexp.config.targets import instantiate

    block = instantiate({"_target_": f"{HERE}.Block", "_args_": [8, 2], "bias": False})
    assert block.proj.weight.shape == (16, 8) and block.proj.bias is None


@pytest.mark.parametrize(
    ("node", "key"),
    [
        ({"_target_": "builtins.dict", "layers": [{"x": {"_target_": "no_such_pkg.Make"}}]}, "layers[0].x._target_"),
        ({"_target_": "builtins.list", "_args_": [{"_target_": "no_such_pkg.Make"}]}, "_args_[0]._target_"),
        ({"norms": {"_target_": "no_such_pkg.Make"}}, "norms._target_"),
    ],
)
def test_a_target_that_does_not_import_when_the_module_is_built_names_its_whole_key(
    node: dict[str, Any], key: str
) -> None:
    """Where the module is built (a cell process, extract rebuilding a run's model), a target that no longer
    imports is the one-line error naming where it sits in the node."""
    from neuronexp.config.targets import instantiate

    with pytest.raises(ConfigError) as err:
        instantiate(node)
    assert str(err.value).startswith(f"module.{key}=no_such_pkg.Make: cannot be imported;")


TRACING = False  # what a decorator below reads: its hook is set only when tracing


def _keywords_only(init):  # a wrapper passing keywords only: (self, **kwargs)
    def wrapper(self, **kwargs):
        return init(self, **kwargs)

    return wrapper


def _positional_only(init):  # a wrapper passing positional arguments only: (*args), self among them
    def wrapper(*args):
        return init(*args)

    return wrapper


def _traced(init):  # its closure has a cell never filled (the hook, unset while not tracing) before `init`
    if TRACING:

        def hook(*args: Any) -> None: ...

    def wrapper(self, *args, **kwargs):
        if TRACING:
            hook(self)
        return init(self, *args, **kwargs)

    return wrapper


def _logged(init):  # its closure has two functions taking *args only or *args and **kwargs: which is the wrapped?
    def log(*args: Any) -> None: ...

    def wrapper(self, *args, **kwargs):
        log(self)
        return init(self, *args, **kwargs)

    return wrapper


class KeywordsOnly(nn.Module):
    @_keywords_only
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


class TwoKeywordsOnly(nn.Module):
    @_keywords_only
    @_keywords_only
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


class Traced(nn.Module):
    @_traced
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


@pytest.mark.parametrize("layer", ["KeywordsOnly", "TwoKeywordsOnly", "Traced"])
def test_the_init_behind_a_keywords_only_or_traced_wrapper_is_found(layer: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_constructor({"_target_": f"{HERE}.{layer}", "hidden": 8, "espilon": 1e-5})
    assert str(err.value) == f"module.espilon=1e-05: not an argument of {layer}(hidden, eps=1e-06)"
    check_constructor({"_target_": f"{HERE}.{layer}", "hidden": 8, "eps": 1e-5})


class PositionalBehindOpen(nn.Module):
    @_hide
    @_positional_only
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.hidden = hidden


class Logged(nn.Module):
    @_logged
    @_hide
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()


def test_a_constructor_the_lookup_cannot_see_through_takes_what_its_signature_says() -> None:
    """Behind a wrapper passing positional arguments only, or where two functions of a closure could be the
    wrapped one, no signature is guessed: the (*args, **kwargs) the class shows is what is checked, and a layer
    built from `_args_` through such wrappers is accepted, as it builds."""
    from neuronexp.config.targets import instantiate

    node = {"_target_": f"{HERE}.PositionalBehindOpen", "_args_": [8]}
    check_constructor(node)
    assert instantiate(node).hidden == 8
    check_constructor({"_target_": f"{HERE}.Logged", "hidden": 8, "anything": 1})
