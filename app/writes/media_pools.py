"""Media pools and the media settings (docs/media.md): a Security Officer's writes."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

create_media_pool = Write(KmsClient.create_media_pool, {"media_pools"}, "Media pool {0} created.")
update_media_pool = Write(KmsClient.update_media_pool, {"media_pools"}, "Media pool {0} saved.")
delete_media_pool = Write(KmsClient.delete_media_pool, {"media_pools"}, "Media pool {0} deleted.")
update_media_settings = Write(KmsClient.update_media_settings, {"media_pools"}, "Media settings saved.")
