"""The store format's numbers: its version and the range of an iteration's number.

Both the file reader (``files.py``) and the stored files' models (``stored.py``) check them.
"""

from __future__ import annotations

# bump when a stored file changes meaning; readers refuse newer formats.  2: packed samples live
# in a sidecar file beside result.json (SAMPLES_FILE), no longer base64 inside it.
STORE_FORMAT = 2
# an iteration's number names its folder (iter-N) and is an index column: SQLite's INTEGER holds
# 64 bits, PostgreSQL's "integer" (mmbench_iterations.idx, mmbench_values.idx) 32
MAX_ITERATION_INDEX = 2**31 - 1
