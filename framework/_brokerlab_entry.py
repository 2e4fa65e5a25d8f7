"""The ``brokerlab`` command's first code: a Ctrl-C while brokerlab is still importing ends the
command quietly (exit 130, one line), as a Ctrl-C does once it runs.

The console script imports this module, not ``brokerlab.cli``: importing the ``brokerlab``
package loads pydantic, numpy and every plugin, about a second in which a Ctrl-C used to print
a ``KeyboardInterrupt`` traceback from deep inside an import. This module imports only the
standard library, so it is in place within milliseconds of the interpreter's start; it lives
outside the package because importing anything inside ``brokerlab`` runs the package's heavy
``__init__`` first.
"""

from __future__ import annotations

# First of all, before any import that could take a moment: _signal is built into the
# interpreter and os is loaded by then (site imports it).
import _signal  # type: ignore[import-not-found]  # no stub: the C half of signal
import os

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as brokerlab.cli reports a Ctrl-C


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Nothing has started yet (no file written, no process spawned): say so and leave at once,
    without unwinding a half-finished import."""
    try:  # noqa: SIM105 (contextlib is one more import to wait for)
        os.write(2, b"brokerlab: interrupted\n")
    except OSError:  # stderr closed: the exit code says it
        pass
    os._exit(EXIT_INTERRUPTED)


# A shell starts background jobs with SIGINT ignored; such a command keeps ignoring it.
_QUIET = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
if _QUIET:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)

import sys  # noqa: E402  (after the handler, on purpose)

__all__ = ["main"]


def main() -> int:
    """The ``brokerlab`` console script: ``brokerlab.cli.main`` behind a quiet Ctrl-C."""
    try:
        from brokerlab.cli import main as run
    finally:
        if _QUIET:  # from here on the command's own handling applies
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    try:
        return run()
    except KeyboardInterrupt:  # between the import and the command's own handler
        sys.stderr.write("brokerlab: interrupted\n")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
