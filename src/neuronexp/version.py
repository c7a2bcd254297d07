"""neuronexp's version, kept here only: pyproject.toml reads it (setuptools' `attr`), and so do `neuronexp --version`,
every command's `--version`, env.json, a run's fingerprint and the report's footer."""

__version__ = "0.1.0"
