"""Which master a matrix runs on, as far as it is known before the JVM starts (no JVM here)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from brokerlab.errors import ProfileError
from brokerlab.spark.matrix import check_master
from brokerlab.spark.session import configured_master, is_loopback

CLUSTER = "spark://cluster-host:7077"


@pytest.fixture
def conf_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Spark configuration: a folder of our own, no MASTER, no PYSPARK_SUBMIT_ARGS."""
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("MASTER", raising=False)
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    "line",
    [
        f"spark.master {CLUSTER}",
        f"spark.master\t{CLUSTER}  ",
        f"spark.master={CLUSTER}",
        f"spark.master = {CLUSTER}",
        f"spark.master:{CLUSTER}",
        f"  spark.master : {CLUSTER}",
    ],
)
def test_spark_defaults_conf_is_read_as_java_properties(conf_dir: Path, line: str) -> None:
    (conf_dir / "spark-defaults.conf").write_text(
        f"# spark.master local[1]\n! spark.master=local\nspark.masterx local\n{line}\n"
    )
    assert configured_master(None) == CLUSTER
    assert not is_loopback(configured_master(None))


@pytest.mark.parametrize(
    "args", [f"--master {CLUSTER} pyspark-shell", f"--conf a=b --master={CLUSTER} pyspark-shell"]
)
def test_pyspark_submit_args_name_the_master(
    conf_dir: Path, monkeypatch: pytest.MonkeyPatch, args: str
) -> None:
    (conf_dir / "spark-defaults.conf").write_text("spark.master local[1]\n")
    monkeypatch.setenv("MASTER", "local[2]")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", args)
    assert configured_master(None) == CLUSTER  # spark-submit's order: --master wins
    assert configured_master("local[3]") == "local[3]"


def test_without_any_configuration_spark_picks_its_default(conf_dir: Path) -> None:
    assert configured_master(None) is None
    assert is_loopback(None)


@pytest.mark.parametrize(
    ("master", "loopback"),
    [
        ("local[*]", True),
        ("spark://127.0.0.1:7077", True),
        ("spark://127.0.1.1:7077", True),
        ("spark://localhost:7077", True),
        ("spark://[::1]:7077", True),
        ("spark://localhost:7077,127.0.0.1:7078", True),
        ("spark://localhost-cluster:7077", False),
        ("spark://127.0.0.1.example.com:7077", False),
        ("spark://localhost:7077,cluster-host:7077", False),
        ("k8s://https://localhost.example.com:6443", False),
        ("yarn", False),
    ],
)
def test_loopback_means_every_host_is_this_machine(master: str, loopback: bool) -> None:
    assert is_loopback(master) is loopback


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[4]",
        "local[*]",
        "local[2,3]",
        "spark://h:7077",
        "spark://h1:7077,h2:7077",
        "spark://[::1]:7077",
        "yarn",
        "k8s://https://h:6443",
        "mesos://zk://h:2181/mesos",
    ],
)
def test_master_forms_spark_accepts_pass(master: str) -> None:
    check_master(master)


@pytest.mark.parametrize(
    "master", ["bogus", "local[x]", "local[2", "spark://h", "spark://h:port", "yarn-client", ""]
)
def test_master_of_another_form_is_refused(master: str) -> None:
    with pytest.raises(ProfileError, match=r"'--master'.*is not a Spark master URL.*local\[N\]"):
        check_master(master)
