"""The reference Key Management Appliance (KMA): runs headless, never imports Qt."""

from kms_client.release import release

__version__ = release()
