"""Suite configuration: TOML schema, sizes relative to the memory budget, ``--set`` overrides."""
