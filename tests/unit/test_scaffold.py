"""``brokerlab new-plugin``: names, refusals and what each kind renders (without installing it;
tests/integration/test_new_plugin.py installs and tests the generated packages)."""

from __future__ import annotations

import ast
import configparser
import io
import tomllib
from pathlib import Path

import pytest

from brokerlab.cli import main
from brokerlab.profiles.ready import ready_profiles
from brokerlab.scaffold import KINDS, ScaffoldError, generate, plugin_names
from brokerlab.scaffold.writer import render_all, tox_environments


def _private_imports(path: str, text: str) -> list[str]:
    """Imports of brokerlab modules but the package and its contract kit (a plugin's surface)."""
    if not path.endswith(".py"):
        return []
    modules = []
    for node in ast.walk(ast.parse(text, filename=path)):
        if isinstance(node, ast.ImportFrom):
            modules.append(node.module or "")
        elif isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
    return [
        f"{path}: {m}" for m in modules if m.startswith("brokerlab.") and m != "brokerlab.testing"
    ]


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.mark.parametrize("name", ["clock", "clock-cache", "brokerlab_lfu2", "a1-b2_c3"])
def test_usable_names(name: str) -> None:
    names = plugin_names(name)
    assert names.module.isidentifier()
    assert names.module == name.replace("-", "_")


@pytest.mark.parametrize(
    "name", ["", "Clock", "1clock", "clock--cache", "clock-", "-clock", "clock.cache", "c" * 31]
)
def test_unusable_names_exit_2_saying_what_is_allowed(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "x")
    code, _ = run("new-plugin", "--kind", "entry-cache", "--out", out, "--", name)
    assert code == 2
    assert "lowercase letters, digits and single '-' or '_'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_an_unknown_kind_exits_2_listing_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        run("new-plugin", "clock", "--kind", "cache")
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert all(kind in err for kind in KINDS)


def test_a_folder_that_is_not_empty_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    code, _ = run("new-plugin", "clock", "--kind", "entry-cache", "--out", str(tmp_path))
    assert code == 2
    assert "is not empty: refusing to overwrite it" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_an_empty_folder_is_filled(tmp_path: Path) -> None:
    code, said = run("new-plugin", "clock", "--kind", "cursor-container", "--out", str(tmp_path))
    assert code == 0
    assert (tmp_path / "clock" / "container.py").is_file()
    assert "pip install -e ." in said and "tox" in said


def test_the_default_folder_is_the_name_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    written = generate("clock-cache", "entry-cache")
    assert written.folder == tmp_path / "clock-cache"
    assert (tmp_path / "clock-cache" / "clock_cache" / "cache.py").is_file()


def test_a_name_an_installed_module_has_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="a module named 'json' is already importable"):
        generate("json", "workload", tmp_path / "json")


@pytest.mark.parametrize(("name", "kind"), [("pip430", "entry-cache"), ("tailing", "workload")])
def test_a_name_an_installed_record_has_is_refused(
    name: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("new-plugin", name, "--kind", kind, "--out", str(tmp_path / "x"))
    assert code == 2
    assert f"name {name!r} is taken by plugin" in capsys.readouterr().err


def test_a_settings_namespace_an_installed_plugin_owns_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _ = run("new-plugin", "pip448", "--kind", "ack-state-persister", "--out", str(tmp_path))
    assert code == 2
    assert "sim.pip448. is taken" in capsys.readouterr().err


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_renders_a_complete_package(kind: str) -> None:
    names = plugin_names("my-plugin")
    files = render_all(names, KINDS[kind])
    assert {"pyproject.toml", "README.md", "tox.ini", "my_plugin/__init__.py"} <= set(files)
    assert "tests/test_my_plugin.py" in files and "my_plugin/py.typed" in files
    for path, text in files.items():
        if path.endswith(".py"):
            ast.parse(text, filename=path)  # a template that renders to invalid Python fails
        assert "${" not in text, f"{path} has a placeholder left"
    project = tomllib.loads(files["pyproject.toml"])
    assert project["project"]["entry-points"]["brokerlab"] == {"my-plugin": "my_plugin"}
    assert project["project"]["dependencies"] == ["brokerlab>=0.1.0"]
    assert "from brokerlab import" in files["my_plugin/__init__.py"]
    assert [found for path, text in files.items() for found in _private_imports(path, text)] == []
    assert ("my_plugin/settings.py" in files) == (KINDS[kind].settings_key is not None)
    if KINDS[kind].settings_key is not None:
        assert 'NAMESPACE = "my-plugin"' in files["my_plugin/settings.py"]


def test_tox_has_one_environment_per_ready_profile_but_the_diagnostic_ones() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read_string(render_all(plugin_names("clock"), KINDS["entry-cache"])["tox.ini"])
    listed = tox["tox"]["env_list"].split()
    chosen = dict(
        line.strip().split(": BROKERLAB_PROFILE = ")
        for line in tox["testenv"]["set_env"].splitlines()
        if "BROKERLAB_PROFILE" in line
    )
    ready = {name for name in ready_profiles() if not name.startswith("diagnostics/")}
    assert set(chosen.values()) == ready and listed == list(chosen) == list(tox_environments())
    assert all(env.replace("_", "").isalnum() for env in listed)  # no factor tox reads as Python
    assert tox["testenv"]["deps"].strip().startswith("{env:BROKERLAB:")


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_longest_name_keeps_generated_lines_within_100_characters(kind: str) -> None:
    """The generated pyproject.toml sets ruff's line length to 100: a plugin lints clean as
    generated, whatever the name it was given."""
    files = render_all(plugin_names("abcdefghij-klmnopqrst-uvwxyz12"), KINDS[kind])
    long = [
        f"{path}:{number}"
        for path, text in files.items()
        if path.endswith(".py")
        for number, line in enumerate(text.splitlines(), 1)
        if len(line) > 100
    ]
    assert long == []
