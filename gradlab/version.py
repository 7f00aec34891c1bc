"""gradlab's version: one line, read by the build (pyproject.toml) and imported by every module that reports it."""

__version__ = "0.1.0"
