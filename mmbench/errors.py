"""Error types shared by every stage.

``UsageError`` is bad input from the user (a config file, a ``--set``, an argument): the CLI prints
its message as one line and exits with status 2, never a traceback.  ``WorkloadError`` fails one
workload iteration; the run goes on.
"""


class UsageError(Exception):
    """Bad input: one line naming the file, field or argument and what is wrong."""


class WorkloadError(Exception):
    """A workload iteration failed; the message is recorded as the iteration's reason."""


class EnvironmentUnsupported(Exception):
    """The kernel or machine lacks something a workload or monitor needs (said plainly)."""


class Interrupted(BaseException):
    """SIGTERM or SIGHUP stopped the run (SIGINT is ``KeyboardInterrupt``).

    A ``BaseException``, like ``KeyboardInterrupt``: no ``except Exception`` in a restore, monitor
    stop or process-stop path may swallow it.
    """


# Exit statuses of the ``mmbench`` command (docs/cli.md).  1 is reserved for "a significant
# regression was found" (``compare --fail-on-regression``) so a CI gate can trust it.
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2  # bad input: arguments, suite files, imported files, a damaged store
EXIT_UNSUPPORTED = 3  # the kernel or machine lacks a feature or tool
EXIT_NOT_RESTORED = 4  # a run or restore could not put every change back (journaled)
EXIT_RUN_FAILED = 5  # the run was stored but is not complete (failed or incomplete iterations)
EXIT_INTERNAL = 70  # a bug in mmbench (EX_SOFTWARE): one line plus a saved traceback
