"""The reference Key Management Appliance (KMA): runs headless, never imports Qt."""

__version__ = "0.1.0"
