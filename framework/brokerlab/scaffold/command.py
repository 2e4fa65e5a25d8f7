"""``brokerlab new-plugin NAME --kind KIND``: the subcommand and its handler."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from brokerlab.host import PluginHost
from brokerlab.scaffold.kinds import KINDS, Kind
from brokerlab.scaffold.names import PluginNames, ScaffoldError, plugin_names
from brokerlab.scaffold.writer import generate

__all__ = ["add_new_plugin_command", "check_name_is_free", "run_new_plugin"]


def add_new_plugin_command(commands: Any) -> None:
    """Register ``new-plugin`` on the ``brokerlab`` command's subparsers."""
    parser = commands.add_parser(
        "new-plugin",
        help="write a ready plugin package: implementation, settings, contract tests, tox.ini",
        description="Write a ready third-party plugin package into ./NAME (or --out DIR): a "
        "pyproject.toml with the entry point, a small working implementation, its settings "
        "under sim.NAME., tests on brokerlab's contract kit, a tox.ini with one environment per "
        "ready profile and a README.",
    )
    parser.add_argument(
        "name",
        metavar="NAME",
        help="distribution, record and settings-namespace name: lowercase words joined by '-' "
        "or '_' (the import name is NAME with '_' for '-')",
    )
    parser.add_argument("--kind", required=True, choices=list(KINDS), help="the extension point")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="folder to write (new or empty; default ./NAME)"
    )
    parser.set_defaults(handler=run_new_plugin)


def run_new_plugin(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    """Generate the package and say how to install and test it."""
    check_name_is_free(plugin_names(args.name), KINDS[args.kind], host)
    plugin = generate(args.name, args.kind, args.out)
    out.write(
        f"wrote {plugin.folder}: the {plugin.kind.title} plugin {plugin.names.name!r} "
        f"({len(plugin.files)} files)\n"
        "next, in the environment where brokerlab is installed (README.md says more):\n"
        f"  cd {plugin.folder}\n"
        "  pip install -e .          # brokerlab is installed, so pip fetches nothing for it\n"
        "  python -m pytest          # the contract kit and the plugin's own tests\n"
        "  tox                       # once per ready profile; BROKERLAB=<checkout or wheel>\n"
    )
    return 0


def check_name_is_free(names: PluginNames, kind: Kind, host: PluginHost) -> None:
    """Refuse a name an installed plugin already gives a record of this kind, or a settings
    namespace: the generated plugin would clash with it as soon as it is installed."""
    for reg in host.records(kind.point):
        if names.name in reg.record.names:
            raise ScaffoldError(
                f"the {kind.title} name {names.name!r} is taken by plugin {reg.plugin!r} "
                f"({reg.source}): choose another name"
            )
    if kind.settings_key is not None:
        for settings in host.settings_records():
            if settings.record.namespace == names.name:
                raise ScaffoldError(
                    f"the settings namespace sim.{names.name}. is taken by plugin "
                    f"{settings.plugin!r} ({settings.source}): choose another name"
                )
