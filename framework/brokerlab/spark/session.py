"""Start (or join) the Spark session the matrix runs on.

The master comes from ``--master`` when given, else from the standard Spark configuration
(``spark-defaults.conf``, ``MASTER``, ``PYSPARK_SUBMIT_ARGS``); Spark itself falls back to
``local[*]`` when none is configured, so no master is hard-coded here. For a local or loopback
master all traffic stays on 127.0.0.1 and the Python workers see the driver's import path (so
``-p`` plugin modules import there too).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from brokerlab.errors import ProfileError
from brokerlab.spark.jvm_archive import ArchivePlan, archive_folder, java_binary, plan_archive
from brokerlab.spark.processes import MARKER, end_marked, mark_run

__all__ = ["configured_master", "is_loopback", "start_session", "stop_session"]

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


def _driver_java_options() -> tuple[str, ArchivePlan]:
    """The driver's JVM options, and its part in the class-data-sharing archive."""
    folder, java = archive_folder(), java_binary()
    if folder is None or java is None:
        return _DRIVER_JAVA_OPTIONS, ArchivePlan("")
    plan = plan_archive(folder, java, _spark_home() / "jars", _DRIVER_JAVA_OPTIONS)
    return f"{_DRIVER_JAVA_OPTIONS} {plan.options}".strip(), plan


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
    output: Path | None = None,
) -> tuple[SparkSession, bool]:
    """A Spark session for the matrix, and whether this call created it (then end it with
    :func:`stop_session`). The JVM's and workers' output goes to ``output`` (appended) if given.

    Only the JVM's first start sees the environment set here."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    known = configured_master(master)
    conf = {**_DEFAULT_CONF, **(conf or {})}
    archive = ArchivePlan("")
    if "spark.driver.extraJavaOptions" not in conf and not _spark_default(
        "spark.driver.extraJavaOptions"
    ):
        conf["spark.driver.extraJavaOptions"], archive = _driver_java_options()
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
        session = _in_a_thread(lambda: _create(builder, master, conf, output, archive))
    except Exception as exc:  # an unreachable master, yarn without Hadoop's config, ...
        stop_session(None)
        seen = f"; Spark's output: {output}" if output is not None else ""
        raise ProfileError(
            f"Spark could not start on it ({_reason(exc)}{seen})",
            key="--master",
            value=known or "local[*]",
            allowed="a master that is running and reachable from here",
        ) from exc
    except BaseException:  # Ctrl-C while the JVM starts: it must not outlive us
        stop_session(None, kill=True)
        raise
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def _create(
    builder: SparkSession.Builder,
    master: str | None,
    conf: dict[str, str],
    output: Path | None,
    archive: ArchivePlan,
) -> SparkSession:
    if SparkContext._gateway is None:
        _launch(master, conf, output, archive)
    else:  # a JVM started elsewhere: its options are set, it dumps no archive of ours
        archive.release()
    return builder.getOrCreate()


def _in_a_thread(start: Callable[[], SparkSession]) -> SparkSession:
    """``start()`` in a thread of its own, while this one waits for it.

    Created in the main thread, a SparkContext installs a SIGINT handler of its own, which calls
    into the JVM from the signal handler (py4j then logs re-entrant call errors) and replaces the
    matrix's. And a Ctrl-C here is handled at once (the caller ends the JVM), not when the JVM
    has started."""
    done: list[SparkSession] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(start())
        except BaseException as exc:  # handed to the waiting thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="brokerlab-spark-start", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    if failed:
        raise failed[0]
    return done[0]


# The JVM gateway this process launched (py4j's, untyped), and its archive claim.
_launched: dict[str, Any] = {}


def _launch(
    master: str | None, conf: dict[str, str], output: Path | None, archive: ArchivePlan
) -> None:
    """Start the driver JVM as PySpark would, but in a session of its own (a terminal's Ctrl-C
    reaches the driver alone), with its output in ``output`` (Java's and the Python workers'
    messages and traces stay out of the terminal) and holding the archive claim."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf(loadDefaults=False)
    if master:
        spark_conf.setMaster(master)
    spark_conf.setAll(list(conf.items()))
    popen: dict[str, object] = {"start_new_session": True}
    if archive.claim is not None:
        popen["pass_fds"] = (archive.claim,)
    handle = None
    if output is not None:
        handle = open(output, "ab")  # noqa: SIM115  the JVM writes it until it exits
        popen["stdout"] = popen["stderr"] = handle
    _launched["archive"] = archive
    mark_run()  # before the launch: the JVM and its workers inherit the marker
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs=popen)  # type: ignore[no-untyped-call]
    finally:
        if handle is not None:
            handle.close()  # the JVM has its own copy
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm
    _launched["gateway"] = gateway


def stop_session(session: SparkSession | None, *, kill: bool = False) -> None:
    """Stop ``session`` (``None``: none started) and end the JVM this process launched: let it
    exit (it writes the class-data-sharing archive as it does), or kill it at once with its
    Python workers (``kill``, after Ctrl-C: no Java call then, the JVM may be half started)."""
    import logging

    gateway = _launched.pop("gateway", None)
    archive = _launched.pop("archive", None)
    if kill:
        # The run is over: no py4j "error while sending" from the threads whose JVM calls end.
        logging.disable(logging.CRITICAL)
        context = SparkContext._active_spark_context
        server = getattr(context, "_accumulatorServer", None)
        if server is not None:  # its handler would print the EOFError of the JVM's end
            server.handle_error = lambda request, client_address: None
        marker = os.environ.get(MARKER)
        if marker:
            end_marked(marker)
    elif session is not None:
        session.stop()
    if gateway is not None:
        proc = getattr(gateway, "proc", None)
        with contextlib.suppress(Exception):
            gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # the JVM exits at the end of its input
            try:
                proc.wait(timeout=0 if kill else _EXIT_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if archive is not None:
        archive.release()


_EXIT_SECONDS = 30.0  # the JVM's exit: a second, more when it writes its class archive


def _reason(exc: Exception) -> str:
    """The line of a Spark start failure that says what went wrong (py4j's first line does not)."""
    lines = [line.strip(" :") for line in str(exc).splitlines()]
    useful = [line for line in lines if line and not line.startswith("An error occurred while")]
    return useful[0] if useful else type(exc).__name__
