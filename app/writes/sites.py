"""Sites and KMAs: create, change, delete a site; rename a KMA or move it to a site."""

from __future__ import annotations

from app.writes import Write
from kms_client import KmsClient

create_site = Write(KmsClient.create_site, {"sites"}, "Site {0} created.")
delete_site = Write(KmsClient.delete_site, {"sites"}, "Site {0} deleted.")
update_kma = Write(KmsClient.update_kma, {"kmas", "sites"}, "KMA {0} saved.")
# The KMA answering renews its own at once; another KMA within a second or so (it holds the key).
renew_kma_certificate = Write(
    KmsClient.renew_kma_certificate, {"kmas"}, "KMA {0}'s listener certificate renewal asked for."
)
update_site = Write(KmsClient.update_site, {"sites"}, "Site {0} saved.")
