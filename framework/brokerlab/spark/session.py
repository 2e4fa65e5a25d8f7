"""Start (or join) the Spark session the matrix runs on.

The master comes from ``--master`` when given, else from the standard Spark configuration
(``spark-defaults.conf``, ``MASTER``, ``PYSPARK_SUBMIT_ARGS``); Spark itself falls back to
``local[*]`` when none is configured, so no master is hard-coded here. For a local or loopback
master all traffic stays on 127.0.0.1 and the Python workers see the driver's import path (so
``-p`` plugin modules import there too).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from brokerlab.spark.jvm_archive import archive_folder, java_binary, plan_archive

__all__ = ["configured_master", "is_loopback", "start_session"]

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

# Set for every run: the per-task cost drops from ~25 ms to ~6-17 ms with Unix domain sockets.
_DEFAULT_CONF = {
    "spark.python.unix.domain.socket.enabled": "true",
    "spark.ui.showConsoleProgress": "false",  # our own progress bar replaces Spark's
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


# The driver JVM only schedules tasks and moves a few kilobytes per cell; a full JIT (C2) and a
# parallel GC spend the first minute of every run compiling and collecting on the same two cores
# the Python workers need. C1 only and the serial collector halve a cold start here (20 s to
# 10-15 s), and a class-data-sharing archive (jvm_archive.py) takes another ~5 s off. A driver
# option set in spark-defaults.conf or with --conf wins, and then no archive is used.
_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _driver_java_options() -> str:
    folder, java = archive_folder(), java_binary()
    if folder is None or java is None:
        return _DRIVER_JAVA_OPTIONS
    plan = plan_archive(folder, java, _spark_home() / "jars", _DRIVER_JAVA_OPTIONS)
    return f"{_DRIVER_JAVA_OPTIONS} {plan.options}".strip()


def configured_master(master: str | None) -> str | None:
    """The master this run will use as far as it is known before the JVM starts."""
    if master:
        return master
    if os.environ.get("MASTER"):
        return os.environ["MASTER"]
    return _spark_default("spark.master")


def _spark_default(key: str) -> str | None:
    """``key`` from ``spark-defaults.conf`` (``SPARK_CONF_DIR``, else Spark's own conf folder)."""
    for folder in (os.environ.get("SPARK_CONF_DIR"), _spark_home() / "conf"):
        if folder and (Path(folder) / "spark-defaults.conf").is_file():
            for line in (Path(folder) / "spark-defaults.conf").read_text().splitlines():
                parts = line.strip().split(None, 1)
                if len(parts) == 2 and parts[0] == key:
                    return parts[1].strip()
    return None


def is_loopback(master: str | None) -> bool:
    """True for ``local``, ``local[...]`` and masters on this machine's loopback address."""
    if master is None or master.startswith("local"):
        return True
    address = master.split("://", 1)[-1]
    return address.startswith(_LOOPBACK_HOSTS)


def _spark_home() -> Path:
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def start_session(
    master: str | None = None,
    *,
    app_name: str = "brokerlab matrix",
    conf: dict[str, str] | None = None,
) -> tuple[SparkSession, bool]:
    """A Spark session for the matrix, and whether this call created it (then stop it after).

    Only the JVM's first start sees the environment set here."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    known = configured_master(master)
    conf = {**_DEFAULT_CONF, **(conf or {})}
    if "spark.driver.extraJavaOptions" not in conf and not _spark_default(
        "spark.driver.extraJavaOptions"
    ):
        conf["spark.driver.extraJavaOptions"] = _driver_java_options()
    # PySpark takes the executors' interpreter from PYSPARK_PYTHON when the session starts; the
    # builder's spark.pyspark.python alone is not enough when brokerlab is not spark-submitted.
    if "spark.pyspark.python" in conf:
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    builder = SparkSession.builder.appName(app_name)
    if is_loopback(known):
        # Else workers start "python3" from PATH, which may lack pyarrow or brokerlab.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # else Spark binds the external NIC
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
        if (
            known is None or known.startswith("local")
        ) and SparkContext._active_spark_context is None:
            # Workers then import what the driver imports, -p plugin modules included.
            paths = [p for p in sys.path if p and Path(p).is_dir()]
            old = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *([old] if old else [])])
    if master:
        builder = builder.master(master)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True
