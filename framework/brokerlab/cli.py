"""The ``brokerlab`` command.

The only module that prints for people and chooses exit codes: 0 success, 2 bad input (a
:class:`~brokerlab.errors.BrokerlabError`, printed as one clear message, never a traceback), 1 an
internal error (traceback and a request to report it).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import tomllib
import traceback
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from brokerlab import __version__
from brokerlab._api import load_profile, make_host
from brokerlab._native import build_state
from brokerlab.errors import (
    BrokerlabError,
    OutputError,
    PluginError,
    ProfileError,
    WorkloadError,
)
from brokerlab.files import atomic_path, unwritable_reason
from brokerlab.host import EXTENSION_POINTS, PluginHost
from brokerlab.profiles import Profile, render_reference
from brokerlab.profiles.loader import property_text
from brokerlab.profiles.model import SECTIONS, field_for_key
from brokerlab.profiles.readers import unread_keys
from brokerlab.profiles.ready import ready_folder, ready_profiles
from brokerlab.profiles.reference import render_reference_markdown
from brokerlab.records import SimulatorRecord
from brokerlab.scaffold.command import add_new_plugin_command
from brokerlab.simulation import load_workload, profile_simulators, simulate
from brokerlab.textui import ProgressBar, format_result, metrics_markdown
from brokerlab.workloads import WorkloadDocument
from brokerlab.workloads.resources import (
    DEFAULT_MEMORY_FRACTION,
    Estimate,
    default_memory_limit,
    format_bytes,
    no_bigger_than,
    parse_bytes,
)

if TYPE_CHECKING:  # the report imports pandas: only when a command makes one
    from brokerlab.report import Report
    from brokerlab.report.verdicts import WorkloadVerdict

__all__ = ["main"]

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
ISSUES_URL = "the brokerlab issue tracker"


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line of usage help, as for every other bad input."""

    def error(self, message: str) -> Any:  # argparse's own signature returns NoReturn
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"brokerlab: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="brokerlab",
        description="Evaluate broker storage-layer strategies (Pulsar PIPs, Kafka KIPs) "
        "by simulating a broker under workloads.",
    )
    parser.add_argument(
        "--version", action="version", version=f"brokerlab {__version__} ({build_state()})"
    )
    parser.add_argument(
        "-p",
        dest="modules",
        action="append",
        default=[],
        metavar="MODULE",
        help="also register the plugin module MODULE (repeatable)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    plugins = commands.add_parser("plugins", help="list every plugin record per extension point")
    plugins.add_argument("--json", action="store_true", help="print JSON instead of a table")
    plugins.set_defaults(handler=_cmd_plugins)

    profile = commands.add_parser("profile", help="check or show profiles")
    profile_commands = profile.add_subparsers(dest="profile_command", metavar="ACTION")
    profile_commands.required = True

    mode = _Parser(add_help=False)
    group = mode.add_mutually_exclusive_group()
    group.add_argument(
        "--strict",
        dest="mode",
        action="store_const",
        const="strict",
        help="unknown keys are errors (default for brokerlab profiles)",
    )
    group.add_argument(
        "--lenient",
        dest="mode",
        action="store_const",
        const="lenient",
        help="unknown keys are kept and ignored (default for a real broker.conf)",
    )

    check = profile_commands.add_parser(
        "check", parents=[mode], help="validate profiles and their plugin choices"
    )
    check.add_argument("files", nargs="+", metavar="FILE")
    check.set_defaults(handler=_cmd_profile_check)

    overrides = _Parser(add_help=False)
    overrides.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one profile key (repeatable; wins over environment and file)",
    )
    overrides.add_argument("--json", action="store_true", help="print one JSON object")

    show = profile_commands.add_parser(
        "show", parents=[mode, overrides], help="print a profile's resolved settings"
    )
    show.add_argument("file", metavar="FILE")
    show.add_argument(
        "--unmodelled",
        action="store_true",
        help="list the keys of the file that brokerlab does not model",
    )
    show.set_defaults(handler=_cmd_profile_show)

    listing = profile_commands.add_parser(
        "list", help="list the ready profiles, usable by name wherever a profile path is"
    )
    listing.set_defaults(handler=_cmd_profile_list)

    reference = profile_commands.add_parser(
        "reference", help="print the reference profile: every key, its default and documentation"
    )
    reference.add_argument(
        "--markdown", action="store_true", help="print docs/reference/settings.md instead"
    )
    reference.set_defaults(handler=_cmd_profile_reference)

    metrics = commands.add_parser("metrics", help="list every metric a simulation reports")
    metrics.add_argument("--markdown", action="store_true", help="print docs/metrics.md")
    metrics.set_defaults(handler=_cmd_metrics)

    workloads = commands.add_parser("workloads", help="list the named workloads")
    workloads.set_defaults(handler=_cmd_workloads)

    run = commands.add_parser(
        "run", parents=[overrides], help="run one simulation on this machine (no Spark)"
    )
    run.add_argument("--profile", required=True, metavar="FILE", help="the profile to run")
    run.add_argument(
        "--workload", required=True, metavar="NAME|FILE", help="a named workload or a TOML file"
    )
    run.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0)")
    run.add_argument(
        "--scale",
        type=float,
        default=1.0,
        metavar="F",
        help="shorten the workload as `matrix --scale F` does (0 < F <= 1; default 1), to "
        "reproduce one cell of a scaled matrix",
    )
    _add_max_memory(run)
    run.add_argument(
        "--timeline",
        type=Path,
        metavar="CSV",
        help="also write the samples the simulator took over simulated time to CSV (the Kafka "
        "simulator samples cached, resident and stale bytes)",
    )
    run.set_defaults(handler=_cmd_run)
    _add_matrix_commands(commands)
    add_new_plugin_command(commands)
    return parser


def _add_max_memory(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="refuse a run whose estimated peak memory is above SIZE (e.g. 8G, 512M; default "
        f"{DEFAULT_MEMORY_FRACTION * 100:.0f}%% of this machine's memory)",
    )


def _memory_limit(text: str | None) -> tuple[int, str]:
    """The limit ``--max-memory`` gives (or the default), and how to say so in an error."""
    if text is None:
        return default_memory_limit()
    try:
        limit = parse_bytes(text)
    except ValueError:
        raise ProfileError(
            "is not a size",
            key="--max-memory",
            value=text,
            allowed="a size above 0 such as 8G, 512M or 1.5GiB (binary units), or bytes",
        ) from None
    return limit, f"{format_bytes(limit)} (--max-memory)"


def _estimate(
    workload: WorkloadDocument, max_memory: str | None, host: PluginHost
) -> Estimate | None:
    """The run's resource estimate, refused above the memory limit; ``None`` for a workload of
    a simulator that makes none (``SimulatorRecord.estimate``)."""
    limit, limit_text = _memory_limit(max_memory)
    estimate = host.simulator(workload.simulator).estimate
    if estimate is None:
        return None
    return no_bigger_than(estimate(workload), workload.name, limit, limit_text)


# ---- commands ----------------------------------------------------------------------------------


def _cmd_plugins(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    listing: dict[str, list[dict[str, str]]] = {}
    for point in EXTENSION_POINTS:
        listing[point.name] = [
            {
                "name": reg.record.name,
                "aliases": ", ".join(reg.record.aliases),
                "description": reg.record.description,
                "plugin": reg.plugin,
                "distribution": reg.distribution,
                "version": reg.version,
            }
            for reg in host.records(point.name)
        ]
    settings = [
        {
            "namespace": reg.record.key_prefix or f"{reg.record.namespace} (full keys)",
            "plugin": reg.plugin,
            "source": reg.source,
        }
        for reg in host.settings_records()
    ]
    if args.json:
        json.dump({"extension_points": listing, "settings": settings}, out, indent=2)
        out.write("\n")
        return EXIT_OK
    for point in EXTENSION_POINTS:
        out.write(f"{point.title} ({point.hook}):\n")
        rows = listing[point.name]
        if not rows:
            out.write("  (none installed)\n")
        for row in rows:
            out.write(f"  {row['name']:<24} {row['description']}\n")
            out.write(f"  {'':<24} from {row['distribution']} {row['version']}".rstrip() + "\n")
            if row["aliases"]:
                out.write(f"  {'':<24} aliases: {row['aliases']}\n")
    out.write("plugin settings (brokerlab_settings):\n")
    if not settings:
        out.write("  (none installed)\n")
    for row in settings:
        out.write(f"  {row['namespace']:<24} from {row['source']}\n")
    return EXIT_OK


def _cmd_metrics(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    registry = host.metrics()
    if args.markdown:
        out.write(metrics_markdown(registry))
        return EXIT_OK
    for m in registry.values():
        out.write(f"{m.name:<36} {m.unit:<10} {m.description}\n")
    return EXIT_OK


def _cmd_workloads(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    for reg in host.records("workload"):
        simulator = _simulator_of(reg.record.document)
        out.write(f"{reg.record.name:<26} {simulator:<21} {reg.record.description}\n")
    return EXIT_OK


def _simulator_of(document: str) -> str:
    """The simulator a workload document names, without validating the rest of it."""
    try:
        return str(tomllib.loads(document).get("simulator", "pulsar"))
    except tomllib.TOMLDecodeError:
        return "?"


def _cmd_run(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    if args.seed < 0:  # numpy's seed sequences take non-negative integers only
        raise ProfileError(
            "is out of range", key="--seed", value=args.seed, allowed="an integer >= 0"
        )
    profile = load_profile(args.profile, args.overrides, host=host)
    _warn_case_typos(profile)
    workload = load_workload(host, args.workload)
    simulator = host.simulator(workload.simulator)
    host.resolve(profile)  # an unknown plugin name is the error to report first
    _check_unread(profile, host, simulator.settings_families)
    workload = simulator.scale(workload, args.scale)  # as a matrix cell is scaled
    if args.timeline is not None:  # refused now rather than after a run of seconds or minutes
        _check_timeline(args.timeline, workload.name, simulator, host)
    estimate = _estimate(workload, args.max_memory, host)
    note = estimate.line() if estimate is not None else ""
    bar = ProgressBar(sys.stderr, label=f"{args.workload} seed {args.seed}", note=note)
    result = simulate(profile, workload, args.seed, host=host, progress=bar.update)
    bar.close()
    if args.timeline is not None:
        _write_timeline(args.timeline, result.timeline, simulator)
    if args.json:
        out.write(result.to_json() + "\n")
    else:
        out.write(format_result(result, host.metrics()))
    return EXIT_OK


_WRITABLE = "a file path in a writable folder (missing folders are created)"


def _check_timeline(
    path: Path, workload: str, simulator: SimulatorRecord, host: PluginHost
) -> None:
    if not simulator.timeline:
        recorders = [reg.record.name for reg in host.records("simulator") if reg.record.timeline]
        raise WorkloadError(
            f"asks for a timeline, but the {simulator.name!r} simulator of workload "
            f"{workload!r} records none",
            key="--timeline",
            value=str(path),
            allowed="a workload of a simulator that records one: "
            + (", ".join(recorders) or "(none installed)"),
        )
    problem = unwritable_reason(path)
    if problem is not None:
        raise ProfileError(problem, key="--timeline", value=str(path), allowed=_WRITABLE)


def _write_timeline(
    path: Path, samples: Sequence[Mapping[str, float]], simulator: SimulatorRecord
) -> None:
    if not samples:
        raise PluginError(
            f"the {simulator.name!r} simulator declares a timeline but returned no samples"
        )
    try:
        with atomic_path(path) as temporary, temporary.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(samples[0]))
            writer.writeheader()
            writer.writerows(samples)
    except OSError as exc:  # what unwritable_reason cannot foresee, e.g. /proc as root
        raise ProfileError(
            f"cannot be written ({exc.strerror or exc})",
            key="--timeline",
            value=str(path),
            allowed=_WRITABLE,
        ) from exc


def _cmd_profile_reference(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    render = render_reference_markdown if args.markdown else render_reference
    out.write(render(plugin_settings=host.plugin_settings()))
    return EXIT_OK


def _warn_case_typos(profile: Profile) -> None:
    """Keys a lenient profile ignores although they look like a known key but for case."""
    for key, known in profile.case_typos().items():
        origin = profile.unmodelled[key][1]
        sys.stderr.write(
            f"brokerlab: warning: {origin}: key {key!r} is not modelled and is ignored, as "
            f"Pulsar ignores it; did you mean {known!r}?\n"
        )


def _check_unread(
    profile: Profile, host: PluginHost, families: Collection[str] | None = None
) -> None:
    """Refuse keys no selected plugin reads (:mod:`brokerlab.profiles.readers`): set in ``--set``
    or in a strict profile they are errors, in a lenient one (a real broker.conf) warnings.

    Profile keys are judged against what the profile selects; ``--set`` keys also against the
    simulator ``families`` that will run it (a Kafka key on a Pulsar run)."""
    found = {unread.key: unread for unread in unread_keys(profile, host)}
    if families is not None:
        set_keys = [key for key, origin in profile.origins.items() if origin.source == "--set"]
        for unread in unread_keys(profile, host, families, keys=set_keys):
            found.setdefault(unread.key, unread)
    errors: list[ProfileError] = []
    for unread in found.values():
        error = ProfileError(
            unread.problem(),
            origin=unread.origin,
            key=unread.key,
            value=property_text(profile.get(unread.key)),
        )
        if unread.origin.source == "--set" or profile.mode == "strict":
            errors.append(error)
        else:
            sys.stderr.write(f"brokerlab: warning: {error}\n")
    if errors:
        for other in errors[1:]:
            errors[0].add_note(f"also: {other}")
        raise errors[0]


def _warn_unread(profile: Profile, host: PluginHost) -> None:
    """What :func:`_check_unread` finds, as warnings only (``profile show`` never fails on it)."""
    try:
        for unread in unread_keys(profile, host):
            error = ProfileError(unread.problem(), origin=unread.origin, key=unread.key)
            sys.stderr.write(f"brokerlab: warning: {error}\n")
    except BrokerlabError:
        return  # no resolvable plugins: show lists why itself


def _cmd_profile_list(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    profiles = ready_profiles()
    width = max(map(len, profiles), default=0)
    for name, path in profiles.items():
        out.write(f"{name:<{width}}  {_first_comment(path)}\n")
    return EXIT_OK


def _first_comment(path: Path) -> str:
    """A profile's first comment line, without its ``#`` and a "brokerlab profile:" prefix."""
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("#") and text.strip("# "):
            return text.lstrip("# ").removeprefix("brokerlab profile: ")
    return ""


def _cmd_profile_check(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    for path in args.files:
        profile = load_profile(path, host=host, mode=args.mode)
        _warn_case_typos(profile)
        choices = host.resolve(profile)
        _check_unread(profile, host)
        summary = ", ".join(f"{k}={v}" for k, v in choices.names().items() if v)
        extra = f"; {len(profile.unmodelled)} unmodelled keys ignored" if profile.unmodelled else ""
        out.write(f"{path}: ok ({profile.mode}{extra}): {summary}\n")
    return EXIT_OK


def _plugin_lines(profile: Profile, host: PluginHost) -> dict[str, str]:
    """Each extension point's choice, or why it cannot be resolved (show never fails on this)."""
    try:
        return host.resolve(profile).names()
    except BrokerlabError as exc:
        return {"unresolved": str(exc)}


def _section_of(key: str) -> str:
    found = field_for_key(key)
    if found is None:
        return "Plugin " + key.split(".")[1] if key.startswith("sim.") else "Other"
    extra = found[1].json_schema_extra
    section = extra.get("section") if isinstance(extra, dict) else None
    return str(section) if section else "Other"


def _cmd_profile_show(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    profile = load_profile(args.file, args.overrides, host=host, mode=args.mode)
    _warn_unread(profile, host)
    resolved = profile.resolved()
    origins = {key: str(profile.origin(key) or "default") for key in resolved}
    plugins = _plugin_lines(profile, host)
    if args.json:
        document: dict[str, Any] = {
            "profile": str(profile.path) if profile.path else None,
            "mode": profile.mode,
            "fingerprint": profile.fingerprint(),
            "settings": resolved,
            "origins": origins,
            "plugins": plugins,
        }
        if args.unmodelled:
            document["unmodelled"] = {
                key: {"value": value, "origin": str(origin)}
                for key, (value, origin) in profile.unmodelled.items()
            }
        json.dump(document, out, indent=2, default=str)
        out.write("\n")
        return EXIT_OK
    if args.unmodelled:
        out.write(
            f"# {len(profile.unmodelled)} keys of {args.file} that brokerlab does not model\n"
        )
        for key, (value, origin) in profile.unmodelled.items():
            out.write(f"{key}={value}    # {origin}\n")
        return EXIT_OK
    out.write(
        f"# profile {args.file} ({profile.mode} mode), fingerprint {profile.fingerprint()[:12]}\n"
    )
    by_section: dict[str, list[str]] = {}
    for key in resolved:
        by_section.setdefault(_section_of(key), []).append(key)
    order = [*SECTIONS, *sorted(set(by_section) - set(SECTIONS))]
    for section in order:
        keys = by_section.get(section)
        if not keys:
            continue
        out.write(f"\n[{section}]\n")
        for key in keys:
            out.write(f"{key}={_format_value(resolved[key])}    # {origins[key]}\n")
    out.write("\n[plugins]\n")
    for point, name in plugins.items():
        out.write(f"{point}={name}\n")
    if profile.unmodelled:
        out.write(
            f"\n# {len(profile.unmodelled)} unmodelled keys ignored; "
            "list them with 'profile show --unmodelled'\n"
        )
    return EXIT_OK


def _format_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


# ---- matrix and report: the Spark runner (brokerlab.spark) and its report (brokerlab.report) ---

EXIT_CELLS_FAILED = 3  # the matrix finished, but some cells failed (they are named on stderr)


def _add_matrix_commands(commands: Any) -> None:
    matrix = commands.add_parser(
        "matrix",
        help="run a matrix of profiles x --set sweeps x workloads x seeds on Spark",
        description="Run every combination of profiles, --set values, workloads and seeds on "
        "Apache Spark (local[*] unless --master or the Spark configuration names a cluster), "
        "write Parquet results, summary.csv and report.html. With no --profile, --set or "
        "--workload it runs the showcase: every ready profile x every named workload x 3 "
        "seeds, shortened (--scale) to finish in minutes.",
        epilog="exit codes: 0 all cells ok, 2 bad input, 3 some cells failed (named on stderr; "
        "re-run into the same --out to retry only them), 130 interrupted (re-run to resume), "
        "1 internal error",
    )
    matrix.add_argument(
        "--profile",
        dest="profiles",
        action="append",
        default=[],
        metavar="FILE",
        help="a profile (repeatable; default: every ready profile in profiles/)",
    )
    matrix.add_argument(
        "--set",
        dest="sweeps",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="sweep a key over values (repeatable; \\, keeps a comma inside a value)",
    )
    matrix.add_argument(
        "--workload",
        dest="workloads",
        action="append",
        default=[],
        metavar="NAME|FILE",
        help="a named workload or TOML file (repeatable; default: every named workload)",
    )
    matrix.add_argument(
        "--seeds", type=int, default=3, metavar="N", help="seeds 0..N-1 (default 3)"
    )
    matrix.add_argument(
        "--scale",
        type=float,
        default=None,
        metavar="F",
        help="shorten each workload's time axis by F (0 < F <= 1; default 1, showcase: chosen "
        "to fit ~4 minutes on this machine's cores)",
    )
    matrix.add_argument("--master", metavar="URL", help="Spark master (default: Spark's config)")
    matrix.add_argument(
        "--conf",
        dest="spark_conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark configuration value (repeatable)",
    )
    matrix.add_argument(
        "--engine",
        choices=("rdd", "pandas"),
        default="rdd",
        # The RDD API was faster in every benchmark run here (no Arrow conversion either side).
        help="Spark API for the cells: the RDD API (default) or mapInPandas",
    )
    matrix.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="results folder (default results/<UTC timestamp>/; an existing one is resumed)",
    )
    matrix.add_argument("--baseline", metavar="NAME", help=_BASELINE_HELP)
    _add_max_memory(matrix)
    matrix.set_defaults(handler=_cmd_matrix)

    report = commands.add_parser("report", help="rebuild report.html from a matrix's results")
    report.add_argument("out", type=Path, metavar="DIR", help="a brokerlab matrix --out folder")
    report.add_argument("--baseline", metavar="NAME", help=_BASELINE_HELP)
    report.set_defaults(handler=_cmd_report)


_BASELINE_HELP = (
    "the configuration every other is compared with in the verdicts: a profile name (its first "
    "--set values) or a configuration label as the report shows it (default: the first --profile)"
)


def _check_baseline(baseline: str | None, profiles: Sequence[str]) -> None:
    """Refuse a --baseline that no configuration of the matrix can have, before Spark starts."""
    from brokerlab.spark.cells import profile_labels

    labels = profile_labels(profiles)
    if baseline is None or any(baseline == x or baseline.startswith(f"{x} ") for x in labels):
        return
    raise ProfileError(
        "names none of the profiles", key="--baseline", value=baseline, allowed=", ".join(labels)
    )


def _verdict_lines(verdicts: Sequence[WorkloadVerdict], out: TextIO) -> str:
    """One line per workload, as the report opens with them; on a terminal each is wrapped to
    its width, with a hanging indent (piped, a verdict stays one line for grep)."""
    if not verdicts:
        return ""
    lines = [f"  {v.line()}" for v in verdicts]
    if out.isatty():
        import shutil
        import textwrap

        width = max(60, shutil.get_terminal_size().columns - 1)
        lines = [textwrap.fill(line, width, subsequent_indent="      ") for line in lines]
    return "verdicts:\n" + "".join(f"{line}\n" for line in lines)


def _runs_pulsar(profile: Profile, host: PluginHost) -> bool:
    fits = profile_simulators(profile, host)
    return not fits or "pulsar" in fits


def _cmd_matrix(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    import os

    from brokerlab.report import build_report
    from brokerlab.spark import (
        MatrixRequest,
        ready_profiles,
        run_matrix,
        showcase_focus,
        showcase_scale,
    )

    showcase = not (args.profiles or args.workloads or args.sweeps)
    profiles = args.profiles or [str(p) for p in ready_profiles(_profiles_folder())]
    if showcase:  # the first profile is the verdicts' baseline: the release before the features
        profiles.sort(key=lambda path: Path(path).name != SHOWCASE_BASELINE)
    if not profiles:
        raise ProfileError("has no ready profiles (*.conf); give --profile FILE", value="profiles/")
    workloads = args.workloads or [reg.record.name for reg in host.records("workload")]
    scale = args.scale
    if scale is None:
        local = args.master is None or args.master.startswith("local")
        cores = (os.cpu_count() or 2) if local else 2
        # The measured showcase cost is that of the Pulsar workloads; the other simulators'
        # built-ins are cheap at showcase scales, so only profiles that run Pulsar count.
        pulsar = [p for p in profiles if _runs_pulsar(load_profile(p, host=host), host)]
        scale = showcase_scale(len(pulsar), args.seeds, cores) if showcase else 1.0
    conf: dict[str, str] = {}
    for item in args.spark_conf:
        key, separator, value = item.partition("=")
        if not separator or not key.strip():
            raise ProfileError("is not of the form key=value", key="--conf", value=item)
        conf[key.strip()] = value
    # The showcase adds its focused comparisons: ack-state limits lowered so that they bind.
    also = showcase_focus(_profiles_folder(), args.seeds, scale) if showcase else ()
    if showcase:
        sys.stderr.write(
            f"showcase: {len(profiles)} profiles x {len(workloads)} workloads (each profile with "
            f"the workloads of its simulator) x {args.seeds} seeds, scaled by {scale} "
            f"(--scale), and {len(also)} profiles with a limit lowered to bind\n"
        )
    request = MatrixRequest(
        profiles=profiles,
        sweeps=args.sweeps,
        workloads=workloads,
        seeds=args.seeds,
        scale=scale,
        out=args.out,
        master=args.master,
        modules=args.modules,
        engine=args.engine,
        spark_conf=conf,
        also=also,
    )
    _check_baseline(args.baseline, profiles)
    _check_matrix_keys(profiles, args.sweeps, workloads, host)
    note = _largest_cell(workloads, scale, args.max_memory, host)
    reports: list[Report] = []  # written while the run still holds the folder's lock
    outcome = run_matrix(
        replace(request, note=note),
        host,
        sys.stderr,
        then=lambda out: reports.append(build_report(out, baseline=args.baseline)),
    )
    (report,) = reports
    out.write(
        f"{outcome.cells:,} cells ({outcome.resumed:,} resumed, {outcome.ran:,} run, "
        f"{len(outcome.failed):,} failed)\n"
        f"results:  {outcome.out / 'results'} (Parquet, partitioned by workload)\n"
        f"summary:  {outcome.out / 'summary.csv'}\n"
        f"verdicts: {outcome.out / 'verdicts.csv'}\n"
        f"report:   {report.path}\n"
        f"{_verdict_lines(report.verdicts, out)}"
    )
    if outcome.failed:
        sys.stderr.write(
            f"brokerlab: {len(outcome.failed)} cells failed (tracebacks in the "
            "report and the Parquet 'error' column):\n"
        )
        for label in outcome.failed:
            sys.stderr.write(f"  {label}\n")
        return EXIT_CELLS_FAILED
    return EXIT_OK


_UNESCAPED_COMMA = re.compile(r"(?<!\\),")


def _check_matrix_keys(
    profiles: Sequence[str], sweeps: Sequence[str], workloads: Sequence[str], host: PluginHost
) -> None:
    """Refuse, before Spark starts, keys no selected plugin reads: in a strict profile, and in a
    plain ``--set`` (one value) as ``run`` does. A sweep over several values is the matrix
    expansion's business: there such a key is "not applied" for that profile."""
    families = {
        host.simulator(load_workload(host, name).simulator).settings_families for name in workloads
    }
    plain = [item for item in sweeps if "=" in item and not _UNESCAPED_COMMA.search(item)]
    for path in profiles:
        profile = load_profile(path, host=host)
        _check_unread(profile, host)
        if not plain:
            continue
        fits = profile_simulators(profile, host)
        runs = {family for fam in families if not fits or fits & fam for family in fam}
        overrides = [item.replace("\\,", ",") for item in plain]
        _check_unread(load_profile(path, overrides, host=host), host, runs)


def _largest_cell(
    workloads: Sequence[str], scale: float, max_memory: str | None, host: PluginHost
) -> str:
    """Refuse a workload whose cells would need more memory than the limit (before Spark
    starts); the estimate of the largest cell, to show with the progress."""
    largest: tuple[float, str, Estimate] | None = None
    for name in workloads:
        workload = load_workload(host, name)
        scaled = host.simulator(workload.simulator).scale(workload, scale)
        estimate = _estimate(scaled, max_memory, host)
        if estimate is not None and (largest is None or estimate.peak_bytes > largest[0]):
            largest = (estimate.peak_bytes, workload.name, estimate)
    if largest is None:
        return ""
    return f"largest cell, {largest[1]}: {largest[2].line().removeprefix('estimate: ')}"


SHOWCASE_BASELINE = "pulsar-4.0-legacy.conf"
"""The showcase compares every configuration with Pulsar 4.0 (legacy entry cache, legacy delayed
delivery tracker, range-count ack state); a Kafka workload with its first profile, size-only."""


def _profiles_folder() -> Path:
    """The ready profiles: installed with the package, else the source checkout's profiles/."""
    folder = ready_folder()
    if folder is None:
        raise ProfileError(
            "no ready profiles found beside this brokerlab", key="--profile", value=""
        )
    return folder


def _cmd_report(args: argparse.Namespace, host: PluginHost, out: TextIO) -> int:
    from brokerlab.report import build_report
    from brokerlab.spark.lock import holding
    from brokerlab.spark.results import warn_on_stderr

    if not args.out.is_dir():  # build_report says it holds no results; nothing to lock
        report = build_report(args.out, baseline=args.baseline)
    else:
        with holding(args.out, "report", warn_on_stderr):
            try:
                report = build_report(args.out, baseline=args.baseline)
            except OSError as exc:  # a full disk, a folder where a file goes
                raise OutputError(
                    f"cannot write {exc.filename or args.out}: {exc.strerror or exc}; the "
                    f"results in {args.out / 'results'} are unchanged"
                ) from exc
    out.write(f"report: {report.path}\n{_verdict_lines(report.verdicts, out)}")
    return EXIT_OK


# ---- entry point -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    out = out or sys.stdout
    args = _build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace, PluginHost, TextIO], int] = args.handler
    if args.modules:
        # As `python -m` does: a -p module may sit in the current folder. Last on the path, so
        # that it never shadows an installed package (local Spark workers inherit the path).
        here = os.getcwd()
        if here not in sys.path and "" not in sys.path:
            sys.path.append(here)
    try:
        host = make_host(args.modules)
        return handler(args, host, out)
    except BrokerlabError as exc:
        sys.stderr.write(f"brokerlab: error: {exc}\n")
        for note in getattr(exc, "__notes__", ()):
            sys.stderr.write(f"brokerlab: {note}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt as exc:  # a matrix says what it saved (MatrixInterrupted)
        sys.stderr.write(f"brokerlab: {str(exc) or 'interrupted'}\n")
        return EXIT_INTERRUPTED
    except Exception:
        traceback.print_exc()
        sys.stderr.write(
            "brokerlab: internal error: this is a bug in brokerlab or a plugin; please report it "
            f"with the traceback above to {ISSUES_URL}.\n"
        )
        return EXIT_INTERNAL


if __name__ == "__main__":  # python -m brokerlab.cli, as python -m brokerlab (__main__.py)
    sys.exit(main())
