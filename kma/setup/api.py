"""The set-up API: all that an uninitialised KMA's management port answers.

GET  /api/v1/ca                  the temporary certificate (its fingerprint is on the console)
GET  /api/v1/setup               that this KMA waits for set-up, and the modes it offers
POST /api/v1/setup/code          check the set-up code (every POST below carries it too)
POST /api/v1/setup/network       can the KMA listen on these management and service addresses?
POST /api/v1/setup/key-split     draft the key split; answers which members must prove it
POST /api/v1/setup/proof         those members' passphrases again: do they reconstruct the secret?
POST /api/v1/setup/hsm           does this [hsm] token open with its PIN? (and the module's token labels)
POST /api/v1/setup/finish        the rest of the answers: the KMA is made, and serves normally
PUT  /api/v1/setup/restore/database-backup       a restore's two backup files, sent by the installer
PUT  /api/v1/setup/restore/core-security-backup  (raw bodies, up to 256 MiB each; ?name=FILE)
POST /api/v1/setup/restore/check  do the two files belong together? (before anyone types a passphrase)
POST /api/v1/setup/restore       a quorum's passphrases and this machine's addresses: the KMA is restored
POST /api/v1/setup/join          an existing KMA, its CA fingerprint, this KMA's ID and one-time passphrase

The backup files are uploaded rather than named by a path on the KMA: the installer at a manager
holds them (a backup medium at their desk), and a KMA just unpacked has no way yet to receive files.

Every other route is refused with 503 `setup_mode`. The set-up code travels in the
`X-Setup-Code` header.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from pydantic import BaseModel, Field

from kma import __version__
from kma.api import errors
from kma.api.app import PREFIX, BodyLimit
from kma.api.deps import client_address
from kma.errors import KmaError
from kma.services.quorum.key_split import Credential
from kma.setup.answers import DEFAULT_POOL, Answers, SplitMember, read_hsm
from kma.setup.join import join_answers
from kma.setup.new_cluster import check_new_token
from kma.setup.restore import RestoreAnswers, check_pair, check_token, token_for
from kma.setup.service import SetupSession

SETUP_MAX_BODY = 256 * 2**20  # a backup file; a database backup of a large cluster is tens of MiB
UPLOADS = {"database-backup": "database backup", "core-security-backup": "core security backup"}

router = APIRouter(tags=["set-up"])


class SetupOnly(KmaError):
    code, status = "setup_mode", 503


def session(request: Request) -> SetupSession:
    setup: SetupSession = request.app.state.setup
    return setup


def with_code(request: Request, x_setup_code: Annotated[str, Header()] = "") -> SetupSession:
    setup = session(request)
    setup.check_code(x_setup_code, client_address(request))
    return setup


Session = Annotated[SetupSession, Depends(session)]
Authorised = Annotated[SetupSession, Depends(with_code)]
Text = Annotated[str, Field(max_length=300)]
FileName = Annotated[str, Query(max_length=255)]


class Network(BaseModel):
    management_address: Text
    service_address: Text


class Member(BaseModel):
    name: Text
    passphrase: Annotated[str, Field(max_length=256)]


class KeySplit(BaseModel):
    threshold: int
    members: Annotated[list[Member], Field(max_length=20)]


class Proof(BaseModel):
    members: Annotated[list[Member], Field(max_length=20)]


class Site(BaseModel):
    id: Text
    name: Text


class Kma(BaseModel):
    id: Text
    name: Text
    management_address: Text
    service_address: Text


class Officer(BaseModel):
    id: Text
    name: Text
    passphrase: Annotated[str, Field(max_length=256)]


class Finish(BaseModel):
    """The answers file's fields; the key split members' passphrases are already sealed in the
    proven draft, so only their names come here."""

    mode: Text = "new_cluster"
    cluster_name: Text
    site: Site
    kma: Kma
    security_officer: Officer
    threshold: int
    members: Annotated[list[Text], Field(max_length=20)]
    autonomous_unlock: bool = True
    key_pool_size: int = DEFAULT_POOL
    hsm: Annotated[dict[str, Text], Field(max_length=8)] | None = None  # [hsm] of the answers (docs/hsm.md)
    # The roles that must sign in with a second factor; an older manager sends none: the default.
    second_factor_roles: Annotated[list[Text], Field(max_length=6)] = ["security_officer"]

    def answers(self) -> Answers:
        return Answers(
            cluster_name=self.cluster_name,
            site_id=self.site.id,
            site_name=self.site.name,
            kma_id=self.kma.id,
            kma_name=self.kma.name,
            management_address=self.kma.management_address,
            service_address=self.kma.service_address,
            officer_id=self.security_officer.id,
            officer_name=self.security_officer.name,
            officer_passphrase=self.security_officer.passphrase,
            threshold=self.threshold,
            members=tuple(SplitMember(name, "") for name in self.members),
            autonomous_unlock=self.autonomous_unlock,
            key_pool_size=self.key_pool_size,
            mode=self.mode,
            hsm=read_hsm(self.hsm, self.kma.id),
            second_factor_roles=tuple(self.second_factor_roles),
        )


class RestoreChoices(BaseModel):
    """What a restore is asked besides the files and the quorum, checked before the quorum types."""

    autonomous_unlock: bool = True
    hsm: Annotated[dict[str, Text], Field(max_length=8)] | None = None  # [hsm] of the answers (docs/hsm.md)


class Restore(RestoreChoices):
    management_address: Text  # this machine's: network settings are not restored
    service_address: Text
    members: Annotated[list[Member], Field(max_length=20)]  # a quorum of the split in the backup


class Join(BaseModel):
    kma: Text  # an existing KMA's management address
    ca_fingerprint: Text
    kma_id: Text
    passphrase: Annotated[str, Field(max_length=256)]
    hsm: Annotated[dict[str, Text], Field(max_length=8)] | None = None  # the token to receive the master key


@router.get("/ca")
def temporary_certificate(setup: Session) -> dict[str, str]:
    return {"ca_pem": setup.certificate_pem, "fingerprint": setup.fingerprint}


@router.get("/setup")
def state(setup: Session) -> dict[str, object]:
    return {
        "state": "finished" if setup.finished.is_set() else "waiting",
        "version": __version__,
        "modes": setup.offered(),
        "service_port": setup.service_port,  # fixed by `kma serve --service-port`; else None
    }


@router.post("/setup/code")
def check_code(setup: Authorised) -> dict[str, bool]:
    return {"ok": True}


@router.post("/setup/network")
def check_network(body: Network, setup: Authorised) -> dict[str, bool]:
    setup.check_network(body.management_address, body.service_address)
    return {"ok": True}


@router.post("/setup/key-split")
def draft_key_split(body: KeySplit, setup: Authorised) -> dict[str, list[str]]:
    chosen = setup.draft_key_split(body.threshold, [(m.name, m.passphrase) for m in body.members])
    return {"proof_members": list(chosen)}


@router.post("/setup/proof")
def prove(body: Proof, setup: Authorised) -> dict[str, str]:
    return {"check": setup.prove({m.name: m.passphrase for m in body.members})}


class TokenCheck(BaseModel):
    kma_id: Text = ""  # names the master key's default label, kma-master-<kma_id>
    hsm: Annotated[dict[str, Text], Field(max_length=8)]


@router.post("/setup/hsm")
def check_hsm(body: TokenCheck, setup: Authorised) -> dict[str, list[str]]:
    """The Master key page's check as the installer leaves it, so a typo in the module, token or
    PIN file is said there, not at the last step; answers the module's token labels."""
    return {"tokens": check_new_token(body.hsm, body.kma_id)}


def made(setup: SetupSession) -> dict[str, str]:
    """Where the set-up KMA serves managers and agents, and its cluster CA's fingerprint."""
    return {
        "management_address": setup.continue_address,
        "service_address": setup.continue_service_address,
        "ca_fingerprint": setup.cluster_fingerprint(),
    }


@router.post("/setup/finish")
def finish(body: Finish, setup: Authorised) -> dict[str, str]:
    setup.finish(body.answers())
    return made(setup)


@router.put("/setup/restore/{upload}")
async def upload(
    upload: Literal["database-backup", "core-security-backup"],
    request: Request,
    setup: Authorised,
    name: FileName = "",
) -> dict[str, int]:
    size = 0
    with setup.upload_path(upload, name).open("wb") as out:
        async for chunk in request.stream():
            out.write(chunk)
            size += len(chunk)
    return {"size": size}


@router.post("/setup/restore/check")
def check_backups(setup: Authorised, body: RestoreChoices | None = None) -> dict[str, object]:
    """What the uploaded pair is a backup of, or the reason they cannot be restored (another
    cluster's pair, a newer schema, a damaged file, a token the master key cannot be restored into
    or that cannot be opened): asked before the quorum types."""
    choices = body or RestoreChoices()
    database, core = (setup.uploaded(kind, what) for kind, what in UPLOADS.items())
    backup, core_backup = check_pair(database, core)
    check_token(token_for(core_backup, choices.hsm, choices.autonomous_unlock))
    manifest = backup.manifest
    return {
        "cluster_name": str(manifest["cluster"].get("name", "")),
        "ca_fingerprint": backup.cluster_fingerprint,
        "kma_id": str(manifest.get("kma_id", "")),
        "created_at": int(manifest["created_at"]),
        # Who the restore's quorum is: the key split the core security backup holds (names only).
        "threshold": core_backup.threshold,
        "members": sorted(core_backup.sealed_shares),
    }


@router.post("/setup/restore")
def restore(body: Restore, setup: Authorised) -> dict[str, str]:
    database, core = (setup.uploaded(kind, what) for kind, what in UPLOADS.items())
    quorum = tuple(Credential(m.name, m.passphrase) for m in body.members)
    setup.restore(
        RestoreAnswers(
            database,
            core,
            quorum,
            body.management_address,
            body.service_address,
            body.autonomous_unlock,
            body.hsm,
        )
    )
    return made(setup)


@router.post("/setup/join")
def join(body: Join, setup: Authorised) -> dict[str, str]:
    setup.join(join_answers(body.model_dump(exclude={"hsm"}), body.hsm))
    return made(setup)


fallback = APIRouter()


@fallback.api_route("/{path:path}", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
def everything_else(path: str) -> None:
    raise SetupOnly(
        "This KMA is not set up yet: it answers only its set-up API until an installer has "
        "set it up (kma init, or Set up a new KMA… in the manager)."
    )


def create_setup_app(setup: SetupSession) -> FastAPI:
    app = FastAPI(
        title="KMA set-up API", version=__version__, openapi_url=None, docs_url=None, redoc_url=None
    )
    app.state.setup = setup
    errors.install(app)  # the contract's error shape; there is no audit trail yet to record in
    app.include_router(router, prefix=PREFIX)
    app.include_router(fallback)
    app.add_middleware(BodyLimit, limit=SETUP_MAX_BODY)
    return app
