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
