"""Render a kind's templates into a new plugin folder."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template

import brokerlab
from brokerlab.profiles.ready import ready_profiles
from brokerlab.scaffold.kinds import KINDS, Kind
from brokerlab.scaffold.names import PluginNames, ScaffoldError, plugin_names

__all__ = ["GeneratedPlugin", "brokerlab_source", "generate", "render_all", "tox_environments"]

_SUFFIX = ".tmpl"  # templates are not Python (ruff and mypy skip them) until rendered
_MODULE_DIR = "MODULE"  # a template path part replaced by the plugin's import name


@dataclass(frozen=True)
class GeneratedPlugin:
    """What :func:`generate` wrote: the folder, the names and the files (relative paths)."""

    folder: Path
    names: PluginNames
    kind: Kind
    files: tuple[str, ...]


def generate(name: str, kind: str, out: Path | None = None) -> GeneratedPlugin:
    """Write a ready plugin package of ``kind`` called ``name`` into ``out`` (default ``./name``).

    Raises :class:`ScaffoldError` for a bad name or kind, a module of that name that is already
    importable, or an output folder that exists and is not empty (nothing is overwritten).
    """
    names = plugin_names(name)
    chosen = KINDS.get(kind)
    if chosen is None:
        raise ScaffoldError(f"unknown plugin kind {kind!r}; choose one of {', '.join(KINDS)}")
    folder = Path.cwd() / name if out is None else Path(out)
    _check_folder(folder)
    _check_module_is_free(names.module)
    rendered = render_all(names, chosen)  # everything first: no half-written folder on a bug
    for relative, text in rendered.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return GeneratedPlugin(folder, names, chosen, tuple(rendered))


def render_all(names: PluginNames, kind: Kind) -> dict[str, str]:
    """Relative path -> text of every file of the plugin (templates of ``common/`` and of the
    kind's folder, plus an empty ``py.typed``)."""
    values = _values(names, kind)
    root = resources.files("brokerlab.scaffold").joinpath("templates")
    files: dict[str, str] = {}
    for folder in ("common", kind.template_folder):
        for relative, template in _templates(root.joinpath(folder), ""):
            target = relative.removesuffix(_SUFFIX).replace(_MODULE_DIR, names.module)
            try:
                files[target] = Template(template.read_text(encoding="utf-8")).substitute(values)
            except (KeyError, ValueError) as exc:  # a template bug, not the user's
                raise RuntimeError(f"scaffold template {folder}/{relative}: {exc!r}") from exc
    files[f"{names.module}/py.typed"] = ""
    return dict(sorted(files.items()))


def _templates(folder: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for child in sorted(folder.iterdir(), key=lambda c: c.name):
        relative = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _templates(child, f"{relative}/")
        elif child.name.endswith(_SUFFIX):
            yield relative, child


def _values(names: PluginNames, kind: Kind) -> Mapping[str, str]:
    environments = tox_environments()
    return {
        "name": names.name,
        "module": names.module,
        "kind": kind.name,
        "title": kind.title,
        "implements": kind.implements,
        "selected_by": Template(kind.selected_by).substitute(name=names.name),
        "try_it": Template(kind.try_it).substitute(name=names.name),
        "settings_section": _settings_section(names, kind),
        "brokerlab_version": brokerlab.__version__,
        "brokerlab_source": brokerlab_source(),
        "tox_env_list": "\n".join(f"    {env}" for env in environments),
        "tox_profiles": "\n".join(
            f"    {env}: BROKERLAB_PROFILE = {profile}" for env, profile in environments.items()
        ),
        "first_env": "pulsar_4_2" if "pulsar_4_2" in environments else next(iter(environments), ""),
    }


def _settings_section(names: PluginNames, kind: Kind) -> str:
    if kind.settings_key is None:
        return (
            f"A {kind.title} has no settings of its own: its factory is given no "
            "`PluginContext`, so no validated keys could reach it."
        )
    return (
        f"Its profile keys live under `sim.{names.name}.` (`{names.module}/settings.py`, a "
        "pydantic model registered by the `brokerlab_settings` hook), e.g. "
        f"`--set sim.{names.name}.{kind.settings_key}=...`. They are validated with the broker's "
        "own keys, so a typo or a value out of bounds fails `brokerlab profile check` like any "
        "other key, and they reach the factory as `context.plugin_settings`."
    )


def tox_environments() -> dict[str, str]:
    """tox environment name -> ready profile name, for every ready profile but the diagnostic
    ones (they reproduce known defects, so contracts are expected to fail under them).

    Names are the profile's with every run of other characters than letters and digits made
    ``_``: tox reads a factor such as ``4.2`` or ``42`` as a Python version.
    """
    return {
        re.sub(r"[^a-z0-9]+", "_", name.lower()): name
        for name in ready_profiles()
        if not name.startswith("diagnostics/")
    }


def brokerlab_source() -> str:
    """What the generated tox.ini installs brokerlab from when ``BROKERLAB`` is not set: the
    checkout this brokerlab runs from, else the bare name (found with ``PIP_FIND_LINKS``)."""
    root = Path(brokerlab.__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "framework" / "brokerlab").is_dir():
        return str(root)
    return "brokerlab"


def _check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise ScaffoldError(f"{folder} exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise ScaffoldError(
            f"{folder} exists and is not empty: refusing to overwrite it (choose another "
            "folder with --out, or remove it)"
        )


def _check_module_is_free(module: str) -> None:
    """A plugin whose import name an installed module already has would import that one."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return
    if spec is not None and spec.origin is not None:  # a namespace package is only a folder
        raise ScaffoldError(
            f"a module named {module!r} is already importable ({spec.origin}): choose another "
            "plugin name"
        )
