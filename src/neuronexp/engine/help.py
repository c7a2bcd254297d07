"""`neuronexp --help`: Hydra's help template (conf/hydra/help/), filled from the invocation's composed config in
neuronexp's sweeper (cli.main routes --help there), as Hydra's own help fills it, but listing only the option groups
the template prints: Hydra's help lists every group twice, copying its config repository ~75 times (about two thirds
of the help's time, docs/performance.md). Imports nothing the help does not print (no torch, no pandas)."""

from __future__ import annotations

import copy
import string
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.object_type import ObjectType
from omegaconf import DictConfig, OmegaConf, open_dict


def help_text(master: DictConfig, loader: Any) -> str:
    """The help template with its values (`${hydra:runtime.choices.module}` resolved against this invocation) and
    the `$APP_CONFIG_GROUPS` / `$HYDRA_CONFIG_GROUPS` / `$CONFIG` it names; any other `$NAME` is left as written."""
    HydraConfig.instance().set_config(master)  # what `${hydra:...}` reads, as in Hydra's own help
    template = string.Template(str(master.hydra.help.template))
    found = template.pattern.finditer(template.template)  # (Template.get_identifiers is Python 3.11's)
    names = {m.group("named") or m.group("braced") for m in found}
    values: dict[str, str] = {}
    if names & {"APP_CONFIG_GROUPS", "HYDRA_CONFIG_GROUPS"}:
        app = "APP_CONFIG_GROUPS" in names
        hydra = "HYDRA_CONFIG_GROUPS" in names
        groups = option_groups(loader, lambda group: app if not _is_hydra(group) else hydra)
        values["APP_CONFIG_GROUPS"] = _format({g: o for g, o in groups.items() if not _is_hydra(g)})
        values["HYDRA_CONFIG_GROUPS"] = _format({g: o for g, o in groups.items() if _is_hydra(g)})
    if "CONFIG" in names:
        job = copy.deepcopy(master)
        with open_dict(job):
            job.pop("hydra", None)
        values["CONFIG"] = OmegaConf.to_yaml(job)
    return template.safe_substitute(values)


def composed_help(overrides: list[str], config_module: str) -> str:
    """The help of `neuronexp --help OVERRIDES` (no sweep, no --config-dir), composed once through Hydra's compose
    API: Hydra's main composes twice (once for the run mode) before a sweeper sees the config."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_module(config_module=config_module, job_name="neuronexp", version_base="1.3"):
        master = compose("config", overrides=overrides, return_hydra_config=True)
        return help_text(master, GlobalHydra.instance().config_loader())


def _is_hydra(group: str) -> bool:
    return group == "hydra" or group.startswith("hydra/")


def option_groups(loader: Any, wanted: Any, parent: str = "") -> dict[str, list[str]]:
    """Every config group under `parent` that `wanted(group)` accepts, with its options: the groups of the config
    search path (neuronexp's conf/, --config-dir, the config store), read from the ConfigLoader's sources as Hydra's
    repository reads them, without the copy of the repository each of its listings makes."""
    sources = loader.get_sources()
    out: dict[str, list[str]] = {}
    for name in _listed(sources, parent, ObjectType.GROUP):
        group = f"{parent}/{name}" if parent else name
        if not wanted(group):
            continue
        if options := _listed(sources, group, ObjectType.CONFIG):
            out[group] = options
        out.update(option_groups(loader, wanted, group))
    return out


def _listed(sources: list[Any], path: str, kind: ObjectType) -> list[str]:
    """What Hydra's ConfigRepository.get_group_options lists: the union over the sources that hold `path`."""
    return sorted({name for source in sources if source.is_group(path) for name in source.list(path, kind)})


def _format(groups: dict[str, list[str]]) -> str:
    """As Hydra's help lists groups (compact): `group: a, b, c`, a line each, sorted."""
    return "".join(f"{group}: {', '.join(options)}\n" for group, options in sorted(groups.items()))
