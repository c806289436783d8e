"""Request and response bodies of media pools and the media rules (docs/media.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kma.api.schemas import Id, Request, Response, Text, Time

Pattern = Annotated[
    str, Field(min_length=1, max_length=65, description="E*, E00000-E49999, ABC000L8-ABC999L8")
]


class MediaPool(Response):
    id: str
    description: str
    pattern: str
    key_group_id: str | None
    never_encrypted: bool
    read_only: bool
    tapes: int  # the data units whose volser the pattern matches
    created_at: Time
    updated_at: Time


class MediaPoolCreate(Request):
    id: Id
    pattern: Pattern
    description: Text = ""
    key_group_id: Id | None = None
    never_encrypted: bool = False
    read_only: bool = False


class MediaPoolPatch(Request):
    pattern: Pattern | None = None
    description: Text | None = None
    key_group_id: Annotated[str, Field(max_length=64, description='"" unbinds the key group')] | None = None
    never_encrypted: bool | None = None
    read_only: bool | None = None


class MediaSettings(Response):
    unmatched: Literal["serve", "warn", "refuse"]
    generation_rule: Literal["warn", "refuse"]


class MediaSettingsPatch(Request):
    unmatched: Literal["serve", "warn", "refuse"] | None = None
    generation_rule: Literal["warn", "refuse"] | None = None


class GenerationMigration(Response):
    generation: str
    drives: int  # enabled drives of this generation
    append: int
    read_only: int
    rewrite_from_bot: int
    unreadable_without: int  # the pool's tapes no other generation's drives here can read


class WrittenBy(Response):
    generation: str
    tapes: int


class MediaPoolMigration(Response):
    pool_id: str
    tapes: int
    writer_unknown: int
    written_by: list[WrittenBy]
    generations: list[GenerationMigration]


class MediaRefusals(Response):
    """This KMA's refused write keys by reason since it started; `cluster`, the same summed over the
    cluster's `cluster_kmas` serving KMAs (each since its own start)."""

    two_pools: int
    never_encrypted: int
    read_only: int
    no_pool: int
    key_group: int
    generation: int
    relabel: int
    cluster: dict[str, int] = {}
    cluster_kmas: int = 1


class TapeToRelabel(Response):
    id: str
    description: str
    key_count: int
    pool_id: str | None
    writer_generation: str | None = None
    updated_at: Time


class TapeMovedBetweenPools(Response):
    """A tape holding a live key of another key group than its media pool's (docs/media.md)."""

    id: str
    pool_id: str
    pool_key_group_id: str | None  # None: a never-encrypted pool
    key_groups: list[str]  # the groups of its live keys
    writer_generation: str | None = None
    updated_at: Time
