"""mmbench: benchmark framework for Linux memory management.

Data flows one way: suite config (``config/``) → runner (``run/``: settings journal, memory
sandbox, ``workloads/``, ``monitors/``) → result store (``store/``) → analysis (``analysis/``)
→ reports (``report/``).
"""

__version__ = "0.1.0"
