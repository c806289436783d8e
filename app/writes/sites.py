"""Sites and KMAs: create, change, delete a site; rename a KMA or move it to a site."""

from __future__ import annotations

from typing import Any

from app.operations import OpContext
from kms_client import Kma, Site


def create_site(worker: OpContext, id: str, name: str, description: str | None = None) -> Site:
    return worker.client.create_site(id, name, description)


def delete_site(worker: OpContext, id: str) -> None:
    return worker.client.delete_site(id)


def update_kma(worker: OpContext, id: str, **options: Any) -> Kma:
    return worker.client.update_kma(id, **options)


def update_site(worker: OpContext, id: str, **options: Any) -> Site:
    return worker.client.update_site(id, **options)
