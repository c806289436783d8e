"""Media pools and the media rules (docs/media.md): a part of `KmsClient`, given its connection
(same threading rule: network I/O, never on the GUI thread)."""

from __future__ import annotations

from ._http import FilterValue, Order, present, query, segment
from .connection import Connection
from .reader import Page, reader
from .wire import MediaPool, MediaPoolMigration, MediaRefusals, MediaSettings, TapeToRelabel


class MediaCalls:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def list_media_pools(
        self,
        /,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[MediaPool]:
        params = query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order)
        return self._connection.list("/media-pools", MediaPool, params)

    def get_media_pool(self, id: str) -> MediaPool:
        return self._connection.call("GET", f"/media-pools/{segment(id)}", reader(MediaPool))

    def create_media_pool(
        self,
        id: str,
        pattern: str,
        *,
        key_group_id: str | None = None,
        never_encrypted: bool = False,
        read_only: bool = False,
        description: str | None = None,
    ) -> MediaPool:
        """Security Officer: a pool of the volsers `pattern` names (E*, E00000-E49999), bound to
        a key group or never encrypted; read only once its tapes are only to be read."""
        body = present(
            id=id,
            pattern=pattern,
            key_group_id=key_group_id,
            never_encrypted=never_encrypted,
            read_only=read_only,
            description=description,
        )
        return self._connection.call("POST", "/media-pools", reader(MediaPool), body=body)

    def update_media_pool(
        self,
        id: str,
        *,
        pattern: str | None = None,
        key_group_id: str | None = None,
        never_encrypted: bool | None = None,
        read_only: bool | None = None,
        description: str | None = None,
    ) -> MediaPool:
        """`key_group_id=""` unbinds the pool from its key group."""
        body = present(
            pattern=pattern,
            key_group_id=key_group_id,
            never_encrypted=never_encrypted,
            read_only=read_only,
            description=description,
        )
        return self._connection.call("PATCH", f"/media-pools/{segment(id)}", reader(MediaPool), body=body)

    def delete_media_pool(self, id: str) -> None:
        self._connection.request("DELETE", f"/media-pools/{segment(id)}")

    def get_media_pool_migration(self, id: str) -> MediaPoolMigration:
        """Per drive generation: the pool's tapes it appends to, only reads, must rewrite from BOT."""
        path = f"/media-pools/{segment(id)}/migration"
        return self._connection.call("GET", path, reader(MediaPoolMigration))

    def get_media_settings(self) -> MediaSettings:
        return self._connection.call("GET", "/media/settings", reader(MediaSettings))

    def update_media_settings(
        self, *, unmatched: str | None = None, generation_rule: str | None = None
    ) -> MediaSettings:
        """`unmatched`: serve, warn or refuse a write key for a volser of no pool; `generation_rule`:
        warn or refuse a write the drive's generation cannot make."""
        body = present(unmatched=unmatched, generation_rule=generation_rule)
        return self._connection.call("PATCH", "/media/settings", reader(MediaSettings), body=body)

    def get_media_refusals(self) -> MediaRefusals:
        """This KMA's refused write keys by reason since it started."""
        return self._connection.call("GET", "/media/refusals", reader(MediaRefusals))

    def list_tapes_to_relabel(
        self,
        /,
        *,
        limit: int = 100,
        cursor: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Order | None = None,
        **filters: FilterValue,
    ) -> Page[TapeToRelabel]:
        """Tapes whose keys were all destroyed: each is written from BOT before it is reused."""
        params = query(filters, limit=limit, cursor=cursor, q=q, sort=sort, order=order)
        return self._connection.list("/media/relabel", TapeToRelabel, params)
