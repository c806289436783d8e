"""A file held in the store in parts (a job's, an upload's, a pending quorum operation's), read
back a part at a time: no reader holds more than a part of it."""

from __future__ import annotations

from collections.abc import Iterator

from kma.appliance import Appliance
from kma.crypto.transfer_stream import Source


def held(kma: Appliance, table: str, owner: str, key: str) -> Source:
    """The parts of `table` whose `owner` column is `key`, in order, from the start at each call."""

    def parts() -> Iterator[bytes]:
        n = 0
        while True:
            row = kma.store.query_one(f"SELECT content FROM {table} WHERE {owner} = ? AND part = ?", (key, n))
            if row is None:
                return
            yield bytes(row["content"])
            n += 1

    return parts
