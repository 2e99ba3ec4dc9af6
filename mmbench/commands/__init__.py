"""The ``mmbench`` commands, one module per group; ``mmbench.cli`` parses arguments and dispatches."""
