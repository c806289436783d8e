from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kma.api import schemas
from kma.api.deps import AgentsRead, AgentsWrite, Kma, Paging, with_filters
from kma.services import agents
from kma.services.paging import Page

router = APIRouter(prefix="/agents", tags=["agents"])


@router.get("", response_model=schemas.Page[schemas.Agent])
def list_agents(
    kma: Kma,
    actor: AgentsRead,
    paging: Paging,
    site_id: str | None = None,
    enabled: bool | None = None,
    key_group_id: str | None = None,
    drive_generation: str | None = None,
    library: str | None = None,
    expires_within_days: Annotated[int | None, Query(ge=0, le=36500)] = None,
) -> Page:
    """`expires_within_days`: only agents whose certificate expires within that many days (or has
    expired): those to renew or give a new enrollment passphrase."""
    return agents.list_agents(
        kma,
        with_filters(
            paging,
            site_id=site_id,
            enabled=enabled,
            key_group_id=key_group_id,
            drive_generation=drive_generation,
            library=library,
            expires_within_days=expires_within_days,
        ),
    )


@router.get("/{agent_id}", response_model=schemas.Agent)
def get_agent(agent_id: str, kma: Kma, actor: AgentsRead) -> agents.AgentRow:
    return agents.get_agent(kma, agent_id)


@router.post("", response_model=schemas.Agent, status_code=201)
def create_agent(body: schemas.AgentCreate, kma: Kma, actor: AgentsWrite) -> agents.AgentRow:
    drive = body.model_dump(include={"drive_model", "drive_generation", "library", "library_partition"})
    return agents.create_agent(
        kma, actor, body.id, body.site_id, body.default_key_group_id, body.description, **drive
    )


@router.patch("/{agent_id}", response_model=schemas.Agent)
def update_agent(agent_id: str, body: schemas.AgentPatch, kma: Kma, actor: AgentsWrite) -> agents.AgentRow:
    return agents.update_agent(kma, actor, agent_id, **body.model_dump(exclude_none=True))


@router.post("/enrollment-passphrases", response_model=schemas.EnrollmentPassphrases)
def new_enrollment_passphrases(body: schemas.AgentIds, kma: Kma, actor: AgentsWrite) -> dict[str, object]:
    """A new one-time passphrase for each agent listed (at most 100 a request): for drives whose
    certificate an operator installs, before it expires. Each replaces the agent's earlier one."""
    return {"passphrases": agents.new_enrollment_passphrases(kma, actor, body.agent_ids)}


@router.post("/{agent_id}/enrollment-passphrase", response_model=schemas.EnrollmentPassphrase)
def new_enrollment_passphrase(agent_id: str, kma: Kma, actor: AgentsWrite) -> dict[str, object]:
    return {"agent_id": agent_id, "passphrase": agents.new_enrollment_passphrase(kma, actor, agent_id)}
