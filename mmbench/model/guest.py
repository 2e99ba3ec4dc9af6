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


# The TCG instruction-counting plugin (vm/insn_plugin.c) and the guest's insn-count monitor meet
# here: the VM runner sets these in the guest's environment when it loads the plugin.
INSN_LOG_ENV = "MMBENCH_INSN_LOG"  # the plugin's log: a host path the guest sees too
INSN_MARKS_ENV = "MMBENCH_INSN_MARKS"  # the user address the plugin watches (hex)
INSN_GROUPS_ENV = "MMBENCH_INSN_GROUPS"  # the kernel function groups, in plugin order, ';'-separated
INSN_MARKS = 0x4D4D42000000  # that address: 4096 slots of 16 bytes, well inside user space
INSN_MARK_STRIDE = 16
INSN_MARK_SLOTS = 4096
GUEST_CLOCK_ENV = "MMBENCH_GUEST_CLOCK"  # "instructions:NS" on the instruction clock, else unset
