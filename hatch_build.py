"""Build hook: compiles the hot modules of the broker model and the built-in plugins with mypyc,
when the machine can.

The list is ``COMPILED`` in ``framework/brokerlab/_native.py``. An editable install compiles them
in place, beside their sources; a wheel carries the compiled files instead. Either way the build
records a digest of each source (``_native.MANIFEST``), which lets the package notice a source
edited after the build and run the sources instead (see ``_native``).

Compiling is an optimisation, never a requirement: set ``BROKERLAB_PURE_PYTHON=1`` to skip it,
and when it fails (no C compiler, no Python headers) the build warns and goes on without it.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Runs in a child process: setuptools keeps global state, and a failed compile must not take the
# build down with it. It runs in a scratch folder, where setuptools finds no project file of ours.
# argv: the build-lib folder (or "" for in place), then one JSON object: each package's folder,
# the folder that gets the shared libraries in place, and per package the module files to compile.
_COMPILE = """
import json, os, sys, tempfile
from setuptools import setup
from mypyc.build import mypycify
build_lib, spec = sys.argv[1], json.loads(sys.argv[2])
packages, groups = spec["packages"], spec["groups"]
with tempfile.TemporaryDirectory() as work:
    os.chdir(work)
    # Not the project's config: its mypy plugin and strictness are for checking (tox -e lint),
    # and the build environment has none of the runtime packages. Only the compiled modules must
    # type-check; a cache of its own keeps an earlier build's findings out.
    config = work + "/mypy.ini"
    open(config, "w").write(
        "[mypy]\\nignore_missing_imports = True\\nfollow_imports = silent\\n"
        f"cache_dir = {work}/mypy-cache\\n"
    )
    # One shared library per source root, compiled side by side; built in one run, they call
    # into each other's classes directly instead of through Python attribute lookups. In place,
    # each module lands beside its source.
    place = ["--build-lib", build_lib] if build_lib else ["--inplace", "--build-lib", work + "/lib"]
    setup(
        name="brokerlab-native",
        package_dir={**packages, "": spec["libraries"]},
        ext_modules=mypycify(
            ["--config-file", config, *[path for paths in groups for path in paths]],
            opt_level="3",
            target_dir=work,
            separate=[(paths, None) for paths in groups],
        ),
        script_args=["build_ext", "--parallel", "2", "--build-temp", work + "/temp", *place],
    )
"""


class NativeBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        native = runpy.run_path(str(root / "framework" / "brokerlab" / "_native.py"))
        roots = {"brokerlab": root / "framework", "brokerlab_plugins": root / "plugins"}
        modules: tuple[str, ...] = native["COMPILED"]
        in_place = version == "editable"
        if in_place:
            _remove_compiled(roots, native["MANIFEST"])  # an earlier build's, whatever comes next
        if os.environ.get("BROKERLAB_PURE_PYTHON", "0") not in ("", "0"):
            self.app.display_info("brokerlab: BROKERLAB_PURE_PYTHON is set, nothing compiled")
            return
        build_lib = "" if in_place else tempfile.mkdtemp(prefix="brokerlab-native-")
        failed = self._compile(roots, modules, build_lib, native["source_path"])
        if failed:
            self.app.display_warning(
                "brokerlab: compiling with mypyc failed; nothing is compiled, all runs as plain "
                f"Python (same results, slower). The compiler said:\n{failed}"
            )
            if in_place:
                _remove_compiled(roots, native["MANIFEST"])
            return
        # The record of what was compiled goes where the compiled files go.
        home = roots["brokerlab"] if in_place else Path(build_lib)
        manifest = home / "brokerlab" / native["MANIFEST"]
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(native["source_digests"](roots, modules), indent=1))
        self.app.display_info(f"brokerlab: compiled {len(modules)} modules with mypyc")
        if in_place:
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        for built in Path(build_lib).rglob("*"):
            if built.is_file():
                build_data["force_include"][str(built)] = str(built.relative_to(build_lib))

    @staticmethod
    def _compile(
        roots: dict[str, Path],
        modules: tuple[str, ...],
        build_lib: str,
        source_path: Callable[[str, dict[str, Path]], Path],
    ) -> str:
        """Compile one group per source root in one run; the compiler's last lines if it failed.

        In place, the shared libraries land in the plugins root, which an editable install has
        on its path (dev-mode-dirs) as it has the framework root."""
        spec = {
            "packages": {package: str(folder / package) for package, folder in roots.items()},
            "libraries": str(roots["brokerlab_plugins"]),
            "groups": [
                [str(source_path(m, roots)) for m in modules if m.partition(".")[0] == package]
                for package in roots
            ],
        }
        job = subprocess.run(
            [sys.executable, "-c", _COMPILE, build_lib, json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
        if job.returncode == 0:
            return ""
        return "\n".join(job.stdout.decode(errors="replace").splitlines()[-15:])


def _remove_compiled(roots: dict[str, Path], manifest: str) -> None:
    """Delete what an editable build left in the source tree: half a build must never load
    beside new sources (the packages hold no other compiled files)."""
    (roots["brokerlab"] / "brokerlab" / manifest).unlink(missing_ok=True)
    for package, folder in roots.items():
        for built in (*folder.glob("*__mypyc.*"), *(folder / package).rglob("*.so")):
            built.unlink()
