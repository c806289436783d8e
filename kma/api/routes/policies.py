"""Key policies and key groups."""

from __future__ import annotations

from fastapi import APIRouter

from kma.api import schemas
from kma.api.deps import Kma, Paging, PoliciesRead, PoliciesWrite
from kma.services import policies
from kma.services.paging import Page

router = APIRouter(tags=["key policies and groups"])


@router.get("/key-policies", response_model=schemas.Page[schemas.KeyPolicy])
def list_key_policies(kma: Kma, actor: PoliciesRead, paging: Paging) -> Page:
    return policies.list_key_policies(kma, paging)


@router.get("/key-policies/{policy_id}", response_model=schemas.KeyPolicy)
def get_key_policy(policy_id: str, kma: Kma, actor: PoliciesRead) -> policies.PolicyRow:
    return policies.get_key_policy(kma, policy_id)


@router.post("/key-policies", response_model=schemas.KeyPolicy, status_code=201)
def create_key_policy(body: schemas.PolicyCreate, kma: Kma, actor: PoliciesWrite) -> policies.PolicyRow:
    return policies.create_key_policy(kma, actor, policy_id=body.id, **body.model_dump(exclude={"id"}))


@router.patch("/key-policies/{policy_id}", response_model=schemas.KeyPolicy)
def update_key_policy(
    policy_id: str, body: schemas.PolicyPatch, kma: Kma, actor: PoliciesWrite
) -> policies.PolicyRow:
    return policies.update_key_policy(kma, actor, policy_id, **body.model_dump(exclude_none=True))


@router.get("/key-groups", response_model=schemas.Page[schemas.KeyGroup])
def list_key_groups(kma: Kma, actor: PoliciesRead, paging: Paging) -> Page:
    return policies.list_key_groups(kma, paging)


@router.get("/key-groups/{group_id}", response_model=schemas.KeyGroup)
def get_key_group(group_id: str, kma: Kma, actor: PoliciesRead) -> policies.GroupRow:
    return policies.get_key_group(kma, group_id)


@router.post("/key-groups", response_model=schemas.KeyGroup, status_code=201)
def create_key_group(body: schemas.GroupCreate, kma: Kma, actor: PoliciesWrite) -> policies.GroupRow:
    return policies.create_key_group(kma, actor, body.id, body.policy_id, body.description)


@router.patch("/key-groups/{group_id}", response_model=schemas.KeyGroup)
def update_key_group(
    group_id: str, body: schemas.GroupPatch, kma: Kma, actor: PoliciesWrite
) -> policies.GroupRow:
    return policies.update_key_group(kma, actor, group_id, body.description)


@router.put("/key-groups/{group_id}/agents", response_model=schemas.KeyGroup)
def set_key_group_agents(
    group_id: str, body: schemas.GroupAgents, kma: Kma, actor: PoliciesWrite
) -> policies.GroupRow:
    return policies.set_key_group_agents(kma, actor, group_id, body.agent_ids)
