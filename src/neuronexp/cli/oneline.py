"""User mistakes as one line: Hydra's and OmegaConf's errors translated to "key=value: what is allowed"."""

from __future__ import annotations

import os
import re

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf.errors import OmegaConfBaseException

from neuronexp.config import ConfigError
from neuronexp.config.validate import schema_keys
from neuronexp.formatting import first_line, yaml_error_line

# Launchers of optional extras, named when they are not installed (hydra/launcher=parallel needs none).
LAUNCHER_PLUGINS = {
    name: "; install it with pip install 'neuronexp[slurm]'" for name in ("submitit_local", "submitit_slurm")
}


def user_error_line(exc: BaseException, argv: list[str] | None = None) -> str | None:
    """One line for a configuration mistake, or None for a genuine bug (which keeps its traceback). `argv`: the command
    line's arguments, to name the override that does not parse (Hydra's parser often names only the token it stopped
    at)."""
    if isinstance(exc, ConfigError):
        return str(exc)
    if isinstance(exc, ValueError) and str(exc).startswith(_GROUP_VALUE) and (bad := _group_value(argv or [])):
        return bad
    if isinstance(exc, (OverrideParseException, ValueError)) and (bad := _unparsable(argv or [])) is not None:
        return bad
    if (bad_yaml := _yaml_error(exc)) is not None:  # a user's config file that does not parse
        return yaml_error_line(bad_yaml)
    if isinstance(exc, MissingConfigException) or (isinstance(exc, HydraException) and "Could not find" in str(exc)):
        return _missing_option_line(str(exc), exc)
    if isinstance(exc, (HydraException, OmegaConfBaseException)):
        return _hydra_error_line(str(exc), exc.__cause__)
    return None


# Hydra's error for a config group's value that its grammar reads as a number, a boolean or null (`module=1.5`).
_GROUP_VALUE = "Config group override must be a string"


def _group_value(argv: list[str]) -> str | None:
    """`module=1.5`, `module=inf`, `-m module=ident,nan`: the first override giving a config group a value that is
    not a name, with the group's options; None when no override does."""
    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        try:
            (override,) = parser.parse_overrides([arg])
            values = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
        except HydraException:  # unparsable, or a sweep only a config loader expands (glob): not this mistake
            continue
        group = override.key_or_group
        bad = next((v for v in values if not isinstance(v, (str, list, dict))), "")
        added = "+" if override.is_add() else ""
        if "." in group or isinstance(bad, str) or (options := _group_options(added + group, argv)) is None:
            continue  # a config key (it takes numbers), or not a group
        text, kind = ("null", "null") if bad is None else (str(bad), "number")
        if isinstance(bad, bool):
            text, kind = text.lower(), "boolean"
        return (
            f"{group}={text}: unknown option ({text} reads as a {kind}, not a config's name); allowed: one of {options}"
        )
    return None


def _group_options(group: str, argv: list[str]) -> str | None:
    """The options of config group `group` (`+group` to add it) where Hydra looks for them (neuronexp's configs,
    --config-dir), from Hydra's own error for a missing option; None when `group` is not a config group."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():  # raised inside Hydra's run: its loader has the run's search path
        return ", ".join(GlobalHydra.instance().config_loader().get_group_options(group.lstrip("+"))) or None
    dirs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-cd", "--config-dir")]
    dirs += [a.split("=", 1)[1] for a in argv if a.startswith("--config-dir=")]
    search = ",".join(f"'file://{os.path.abspath(d)}'" for d in dirs)
    try:
        with initialize_config_module(config_module="neuronexp.conf", version_base="1.3"):
            compose(config_name="config", overrides=[f"{group}='?'", f"hydra.searchpath=[{search}]"])
    except MissingConfigException as exc:
        return ", ".join(exc.options or []) or None
    except Exception:  # anything else: not a group whose options Hydra could list
        return None
    return None


def _unparsable(argv: list[str]) -> str | None:
    """The first override that Hydra's grammar rejects, with why, or None."""
    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-") or ("=" not in arg and not arg.startswith("~")):
            continue  # a flag, or a flag's value (--config-dir DIR)
        try:
            parsed = parser.parse_overrides([arg])
        except OverrideParseException as exc:
            detail = first_line(str(exc).replace(f"Error parsing override '{arg}'", "")) or "bad syntax"
            hint = "; quote values with commas, e.g. 'key=\"0,1\"'" if "," in arg else ""
            return f"{arg}: cannot parse ({detail}){hint}"
        if parsed and not parsed[0].key_or_group.lstrip("+~"):
            return f"{arg}: an override needs a key, e.g. input.shape=[1,1024,4096]"
    return None


def _yaml_error(exc: BaseException | None) -> yaml.YAMLError | None:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, yaml.YAMLError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _hydra_error_line(text: str, cause: BaseException | None) -> str:
    detail = first_line(str(cause)) if cause is not None else ""
    if m := re.match(r"Error locating target '([^']*)'.*?full_key: (\S+)", text, re.S):  # a callback's, say
        while cause is not None and cause.__cause__ is not None:  # Hydra wraps the import's own reason twice
            cause = cause.__cause__
        why = f" ({first_line(str(cause))})" if cause is not None else ""
        return (
            f"{m.group(2)}._target_={m.group(1)}: cannot be imported{why}; give a dotted path to a class importable "
            "from the working directory or experiments/"
        )
    if m := re.match(r"Error merging override (.+)", text):
        return f"{m.group(1)}: {detail or 'cannot be applied'}"
    if m := re.match(r"Could not override '([^']+)'", text):
        key = m.group(1)
        if key == "baseline":
            return (
                f"baseline: {detail or 'cannot be applied'} (a {{key: value}} override merges into the baseline set "
                "already); replace it whole with baseline='key=value,key=value' (quoted), or baseline=null"
            )
        allowed = schema_keys(key.rpartition(".")[0])
        if allowed is not None and "." in key:  # inside neuronexp's own schema: `+key` would be refused too
            typed = re.search(r"use \+(\S+)", text)
            return (
                f"{typed.group(1) if typed else key}: no such key; {key.rpartition('.')[0]} takes {', '.join(allowed)}"
            )
        return f"{key}: no such key ({detail}); add a new key with +{key}=..."
    if m := re.match(r"Error parsing override '([^']+)'\s*(.*)", text, re.S):
        return f"{m.group(1)}: cannot parse ({first_line(m.group(2))}); quote values with commas, e.g. 'key=\"0,1\"'"
    return _one_line(f"{text}; {detail}" if detail else text)


def _missing_option_line(text: str, exc: BaseException) -> str:
    options = getattr(exc, "options", None)
    plugin = re.search(r"In 'hydra/launcher/([^']+)': Could not load 'hydra/launcher/([^']+)'", text)
    if plugin is not None and plugin.group(2) in LAUNCHER_PLUGINS:  # a preset of a plugin that is not installed
        return f"hydra/launcher={plugin.group(1)}: its plugin is not installed{LAUNCHER_PLUGINS[plugin.group(2)]}"
    match = re.search(r"Could not find '([^']+)/([^']+)'", text)
    if match is None:
        return _one_line(text)
    group, value = match.groups()
    if not options:
        options = [ln.strip() for ln in text.splitlines()[1:] if ln.startswith("\t")]
    allowed = f"one of {', '.join(options)}" if options else "no such option"
    hint = LAUNCHER_PLUGINS.get(value, "") if group == "hydra/launcher" else ""
    return f"{group}={value}: unknown option; allowed: {allowed}{hint}"


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("object_type=",))]
    return re.sub(r"\s+", " ", "; ".join(lines))
