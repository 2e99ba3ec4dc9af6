"""Readers of other tools' result trees, imported into the result store as runs."""
