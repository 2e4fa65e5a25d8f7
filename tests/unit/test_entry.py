"""A Ctrl-C while the ``brokerlab`` command is still importing (before ``brokerlab.cli.main``
runs) ends it quietly: exit 130, no traceback (#27).

The command runs as a real process, through the console script ``pyproject.toml`` declares,
written as pip writes console scripts, and gets a real SIGINT at several early moments.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def console_script() -> str:
    """The code of the ``brokerlab`` script an install writes (pip's template)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["brokerlab"].partition(":")
    return (
        "import re\n"
        "import sys\n"
        f"from {module} import {function}\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        f"    sys.exit({function}())\n"
    )


def start(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    paths = [str(ROOT / "framework"), str(ROOT / "plugins")]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [sys.executable, "-c", console_script(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # As in a terminal: SIGINT handled, not ignored as for a background job.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{process.pid}").exists():  # the process exists
        assert time.monotonic() < deadline
        time.sleep(0.001)
    return process


@pytest.mark.parametrize("delay_ms", [0, 50, 150, 400])
def test_ctrl_c_while_importing_exits_130_without_a_traceback(delay_ms: int) -> None:
    # `plugins` imports the whole package and every plugin, then lists them.
    process = start("plugins")
    time.sleep(delay_ms / 1000)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    # Before the interpreter installs any handler the signal ends it (the shell says 130);
    # from then on the command exits 130 itself.
    assert process.returncode in (130, -signal.SIGINT), (process.returncode, err)
    assert "Traceback" not in err and "Error" not in err, err
    assert err in ("", "brokerlab: interrupted\n"), err


def test_the_script_still_runs_the_command_and_its_exit_code() -> None:
    process = start("profile", "check", "/nonexistent.conf")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and err.startswith("brokerlab: error:"), err
    process = start("--version")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0 and out.startswith("brokerlab "), err


def test_the_entry_module_installs_its_handler_before_anything_slow() -> None:
    """Only modules the interpreter has loaded by then come before the handler."""
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import _brokerlab_entry\n"
        "new = set(sys.modules) - before - {'_brokerlab_entry'}\n"
        "print(json.dumps(sorted(new)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "framework")},
        timeout=60,
        check=True,
    )
    loaded = json.loads(result.stdout)
    assert not [name for name in loaded if name.startswith(("brokerlab", "numpy", "pydantic"))]
