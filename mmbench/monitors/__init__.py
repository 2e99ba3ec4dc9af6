"""Monitor plugins: one module each; ``mmbench.plugins.monitors()`` finds them."""
