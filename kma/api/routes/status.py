from __future__ import annotations

from fastapi import APIRouter

from kma import __version__
from kma.api import schemas
from kma.api.deps import Kma, KmaEvenLocked, SignedIn
from kma.capabilities import API_VERSION, CAPABILITIES
from kma.crypto import fingerprint
from kma.services.certificates import ca_renewal
from kma.services.certificates.certificate_expiry import first_certificate
from kma.services.overview import dashboard

router = APIRouter(tags=["status"])


@router.get("/status", response_model=schemas.Status)
def get_status(kma: KmaEvenLocked) -> dashboard.Status:
    return dashboard.get_status(kma)


@router.get("/about", response_model=schemas.About)
def get_about(kma: KmaEvenLocked) -> dict[str, object]:
    """What this KMA offers, before sign-in and locked or not: a manager of another release hides
    what it lacks."""
    return {"release": __version__, "api_version": API_VERSION, "capabilities": list(CAPABILITIES)}


@router.get("/ca", response_model=schemas.CaInfo)
def get_ca(kma: KmaEvenLocked) -> dict[str, object]:
    pem = first_certificate(kma.data_dir.ca_cert.read_text(encoding="ascii"))
    return {
        "ca_pem": pem,
        "fingerprint": fingerprint(pem.encode("ascii")),
        "previous_ca_pems": ca_renewal.previous(kma),
    }


@router.get("/dashboard", response_model=schemas.Dashboard)
def get_dashboard(kma: Kma, actor: SignedIn) -> dashboard.Dashboard:
    return dashboard.get_dashboard(kma)
