"""One simulation in a fresh interpreter: the second run of the kit's determinism checks.

A plugin that depends on anything a process chooses for itself (``hash()`` of a string, which
``PYTHONHASHSEED`` salts; ``id()``; set iteration order) gives the same result twice in one
process and another in the next ``brokerlab run``. So the second run happens in a new interpreter
with another ``PYTHONHASHSEED``. It gets everything as plain data on stdin (how the plugin host
was built, the profile's set keys, the workload, the seed; see
:mod:`brokerlab.profiles.portable`), imports the same modules from the same import path, and
writes the result's JSON document to the file named on its command line.

Run as ``python -m brokerlab.testing._isolated OUT`` by :func:`run_in_fresh_interpreter`.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from brokerlab.host import PluginHost
from brokerlab.profiles.portable import differing_keys, portable_settings, rebuild_profile

if TYPE_CHECKING:
    from brokerlab.profiles import Profile
    from brokerlab.workloads import WorkloadDocument

__all__ = ["FreshRun", "host_recipe", "next_hash_seed", "run_in_fresh_interpreter"]

HASH_SEED_ENV = "PYTHONHASHSEED"
_HASH_SEEDS = 2**32  # PYTHONHASHSEED takes 0 ... 4294967295


@dataclass(frozen=True)
class FreshRun:
    """The result document (``Result.to_json`` as a dict) of a run in a fresh interpreter, and
    the ``PYTHONHASHSEED`` it ran with."""

    document: dict[str, Any]
    hash_seed: int


def next_hash_seed(environ: Mapping[str, str]) -> int:
    """A ``PYTHONHASHSEED`` other than this process's: one more than a fixed one, else 1 (this
    process's random salt is not 1 but with odds of one in 2**64)."""
    mine = environ.get(HASH_SEED_ENV, "")
    return (int(mine) + 1) % _HASH_SEEDS if mine.isdigit() else 1


def host_recipe(host: PluginHost) -> dict[str, Any]:
    """How to build ``host`` again elsewhere, as JSON-ready data.

    Entry points and modules travel by name. An object given in ``plugins=`` travels as
    ``module:attribute`` when it is a module or a module-level global of the module its class is
    defined in; anything else cannot be imported by another process, which is an error saying so.
    """
    objects = {}
    for name, plugin in host.given_plugins.items():
        objects[name] = _reference(name, plugin)
    return {
        "modules": list(host.modules),
        "blocked": sorted(host.blocked),
        "entry_points": host.entry_points,
        "objects": objects,
    }


def _reference(name: str, plugin: object) -> str:
    if isinstance(plugin, ModuleType):
        return f"{plugin.__name__}:"
    module = sys.modules.get(getattr(type(plugin), "__module__", ""))
    for attribute, value in vars(module).items() if module else ():
        if value is plugin:
            return f"{module.__name__}:{attribute}"  # type: ignore[union-attr]
    raise AssertionError(
        f"the determinism check runs the simulation again in a fresh interpreter, which cannot "
        f"import the plugin object given as PluginHost(plugins={{{name!r}: ...}}): register a "
        "module instead (PluginHost(modules=['my_plugin'])), or make the object a global of "
        "its class's module"
    )


def _import(reference: str) -> object:
    module_name, _, attribute = reference.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def _import_path() -> str:
    """This interpreter's import path, as the child's PYTHONPATH (pytest adds test folders)."""
    return os.pathsep.join(entry for entry in sys.path if entry and Path(entry).is_dir())


def run_in_fresh_interpreter(
    host: PluginHost,
    profile: Profile,
    workload: WorkloadDocument | str,
    seed: int,
) -> FreshRun:
    """Run ``workload`` under ``profile`` with ``host``'s plugins in a new interpreter with
    another ``PYTHONHASHSEED``; raises ``AssertionError`` when that run fails."""
    hash_seed = next_hash_seed(os.environ)
    request = {
        "host": host_recipe(host),
        "settings": portable_settings(profile),
        "resolved": profile.resolved(),
        "fingerprint": profile.fingerprint(),
        "workload": workload if isinstance(workload, str) else workload.model_dump(mode="json"),
        "simulator": None if isinstance(workload, str) else workload.simulator,
        "seed": seed,
    }
    env = dict(os.environ, PYTHONPATH=_import_path())
    env[HASH_SEED_ENV] = str(hash_seed)
    with tempfile.TemporaryDirectory(prefix="brokerlab-fresh-") as folder:
        out = Path(folder) / "result.json"
        done = subprocess.run(
            [sys.executable, "-m", __name__, str(out)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-15:])
            raise AssertionError(
                f"the simulation in a fresh interpreter (PYTHONHASHSEED={hash_seed}) failed "
                f"(exit {done.returncode}):\n{tail}"
            )
        return FreshRun(json.loads(out.read_text()), hash_seed)


def _main(out: Path) -> int:
    from brokerlab.simulation import simulate

    request = json.load(sys.stdin)
    recipe = request["host"]
    host = PluginHost(
        modules=recipe["modules"],
        blocked=recipe["blocked"],
        entry_points=recipe["entry_points"],
        plugins={name: _import(ref) for name, ref in recipe["objects"].items()},
    )
    profile = rebuild_profile(request["settings"], host.plugin_settings())
    if profile.fingerprint() != request["fingerprint"]:
        keys = differing_keys(request["resolved"], profile.resolved())
        sys.stderr.write(f"the profile rebuilt here differs (first -> here): {keys}\n")
        return 2
    workload = request["workload"]
    if request["simulator"] is not None:
        model = host.simulator(request["simulator"]).workload_model
        workload = model.model_validate(workload)
    result = simulate(profile, workload, int(request["seed"]), host=host)
    out.write_text(result.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(_main(Path(sys.argv[1])))
