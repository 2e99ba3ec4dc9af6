"""Whether this mmbench runs inside an mmbench VM guest: shared vocabulary for every stage.

The VM runner starts the guest-side ``mmbench run`` with ``MMBENCH_GUEST=1`` in its environment.
There the guest is the machine under test: ``[suite] sandbox = "auto"`` means whole-machine mode
(no memcg limit), and kernel modules the suite needs (vfat) may be loaded, since they die with
the guest.  Nothing else should set the variable.
"""

from __future__ import annotations

import os

GUEST_ENV = "MMBENCH_GUEST"


def in_guest() -> bool:
    """True in the mmbench that runs a suite inside an mmbench VM guest."""
    return os.environ.get(GUEST_ENV, "") not in ("", "0")
