"""Analysis: statistics, significance, the comparison of runs, vmstat rows and history."""
