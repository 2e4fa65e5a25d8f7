"""Start (or join) the Spark session the matrix runs on.

The master comes from ``--master`` when given, else from the standard Spark configuration
(``spark-defaults.conf``, ``MASTER``, ``PYSPARK_SUBMIT_ARGS``); Spark itself falls back to
``local[*]`` when none is configured, so no master is hard-coded here. For a local or loopback
master all traffic stays on 127.0.0.1 and the Python workers see the driver's import path (so
``-p`` plugin modules import there too).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import sys
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from brokerlab.errors import ProfileError
from brokerlab.spark.jvm_archive import archive_folder, java_binary, plan_archive

__all__ = ["configured_master", "is_loopback", "start_session"]

# A line of a Java properties file: the key ends at the first "=", ":" or blank.
_PROPERTY = re.compile(r"\s*([^\s=:]+)\s*[=:\s]\s*(.*)")

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
    """The master this run will use as far as it is known before the JVM starts.

    In spark-submit's order: ``--master`` (here, then in ``PYSPARK_SUBMIT_ARGS``), then
    ``spark.master`` of ``spark-defaults.conf``, then ``MASTER``."""
    return (
        master
        or _submit_args_master()
        or _spark_default("spark.master")
        or os.environ.get("MASTER")
        or None
    )


def _submit_args_master() -> str | None:
    """``--master X`` (or ``--master=X``) in ``PYSPARK_SUBMIT_ARGS``."""
    try:
        words = shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    except ValueError:  # unbalanced quotes: spark-submit refuses them too
        return None
    for index, word in enumerate(words):
        if word == "--master" and index + 1 < len(words):
            return words[index + 1]
        if word.startswith("--master="):
            return word.partition("=")[2]
    return None


def _spark_default(key: str) -> str | None:
    """``key`` from ``spark-defaults.conf`` (``SPARK_CONF_DIR``, else Spark's own conf folder)."""
    for folder in (os.environ.get("SPARK_CONF_DIR"), _spark_home() / "conf"):
        if folder and (Path(folder) / "spark-defaults.conf").is_file():
            for line in (Path(folder) / "spark-defaults.conf").read_text().splitlines():
                match = _PROPERTY.fullmatch(line)
                if match and match[1] == key and not line.lstrip().startswith(("#", "!")):
                    return match[2].strip()
    return None


def is_loopback(master: str | None) -> bool:
    """True for ``local``, ``local[...]`` and masters whose every host is a loopback address."""
    if master is None or master.startswith("local"):
        return True
    if "://" not in master:
        return False  # yarn: wherever Hadoop's configuration points
    # spark://h1:7077,h2:7077 (standby masters), k8s://https://h:6443: hosts of the innermost URL
    address = master.rsplit("://", 1)[1].split("/", 1)[0]
    return all(_is_loopback_host(_host(part)) for part in address.split(","))


def _host(address: str) -> str:
    """``host`` of ``host:port``, ``[v6]:port`` or ``host``."""
    if address.startswith("["):
        return address[1 : address.find("]")]
    return address.partition(":")[0]


def _is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


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
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # an unreachable master, yarn without Hadoop's config, ...
        raise ProfileError(
            f"Spark could not start on it ({_reason(exc)})",
            key="--master",
            value=known or "local[*]",
            allowed="a master that is running and reachable from here",
        ) from exc
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def _reason(exc: Exception) -> str:
    """The line of a Spark start failure that says what went wrong (py4j's first line does not)."""
    lines = [line.strip(" :") for line in str(exc).splitlines()]
    useful = [line for line in lines if line and not line.startswith("An error occurred while")]
    return useful[0] if useful else type(exc).__name__
