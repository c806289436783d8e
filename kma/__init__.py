"""The reference Key Management Appliance (KMA): runs headless, never imports Qt."""

from importlib.metadata import PackageNotFoundError, version

try:
    # pyproject.toml is the one source: the version this copy was installed or frozen from.
    __version__ = version("kms-manager")
except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
    __version__ = "0+unknown"
