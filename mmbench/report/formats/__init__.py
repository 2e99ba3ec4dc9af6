"""Exporters for ``mmbench compare --format``: one short module per format, each defining an
``mmbench.report.base.Exporter`` subclass with a ``name``; ``mmbench.plugins.exporters()`` finds
them and the CLI's ``--format`` choices come from it."""
