"""Directory sign-in's settings: a Security Officer sets them under quorum; an Auditor reads them."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Response

from kma.api.deps import Kma, UsersRead, UsersWrite
from kma.api.directory_schemas import DirectoryPut, DirectorySettings
from kma.api.quorum_schemas import PENDING, PendingQuorumOp, ran_or_pending
from kma.quorum import engine
from kma.services.sign_in import directory

router = APIRouter(prefix="/directory", tags=["users"])


def _settings(kma: Kma) -> DirectorySettings:
    found = directory.get_directory(kma)
    return DirectorySettings.model_validate(
        {"configured": found is not None, **(asdict(found) if found else {})}
    )


@router.get("", response_model=DirectorySettings)
def get_directory(kma: Kma, actor: UsersRead) -> DirectorySettings:
    return _settings(kma)


# Quorum-protected, as it grants roles: with M key split credentials it runs at once, with fewer it
# answers 202 with the pending operation.
@router.put("", response_model=DirectorySettings | PendingQuorumOp, responses=PENDING)
def set_directory(
    body: DirectoryPut, kma: Kma, actor: UsersWrite, response: Response
) -> DirectorySettings | PendingQuorumOp:
    request = body.model_dump(exclude={"credentials"})
    done = engine.submit(kma, actor, "set_directory", request, body.key_split_credentials())
    return ran_or_pending(done, response, lambda: _settings(kma))
