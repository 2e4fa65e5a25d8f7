"""The promises the repository makes to a newcomer: README commands, CI and tox stay in step."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_has_exactly_two_fresh_machine_commands() -> None:
    main_job, tests = readme_commands()
    assert "brokerlab" in main_job and "pip install" in main_job
    assert "pytest" in tests and "pip install" in tests


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, tests = readme_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci_lines


def test_ci_installs_java_only_when_missing() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "command -v java" in ci and "apt-get install" in ci and "openjdk-17" in ci


def test_tox_profile_factors_name_real_profiles() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini", encoding="utf-8")
    (section,) = [name for name in parser.sections() if name.startswith("testenv:profile-")]
    set_env = parser[section]["set_env"]
    for line in filter(None, (raw.strip() for raw in set_env.splitlines())):
        factor, assignment = line.split(":", 1)
        name, value = (part.strip() for part in assignment.split("=", 1))
        assert name == "BROKERLAB_PROFILE"
        path = Path(value.replace("{tox_root}", str(ROOT)))
        assert path.is_file(), f"tox factor {factor} points at a missing profile {path}"
        assert factor in section
