"""Master key generations (kma/crypto/generations.py): a blob of the generation after the one a KMA
holds (a rotation started on another KMA, not taken up here yet) makes the KMA take it up at once."""

from __future__ import annotations

import pytest

from kma.crypto import IntegrityError, WrappingKey
from kma.crypto.generations import MasterKeys
from kma.vault import Vault


def test_a_blob_of_the_next_generation_takes_it_up_and_opens() -> None:
    old, new = WrappingKey.generate(), WrappingKey.generate()
    elsewhere = MasterKeys(new, 2, {1: old})  # the KMA where the rotation started
    blob = elsewhere.wrap("key:1", b"material")
    asked: list[int] = []

    def catch_up(generation: int) -> MasterKeys | None:
        asked.append(generation)
        return MasterKeys(new, 2, {1: old})

    here = MasterKeys(old, 1, catch_up=catch_up)
    assert here.unwrap("key:1", blob) == b"material"
    assert asked == [2]
    assert here.unwrap("key:1", here.wrap("key:1", b"old")) == b"old" and asked == [2]  # its own: no ask

    # Not taken up (the store does not name it, or taking it up failed): the blob does not open
    stuck = MasterKeys(old, 1, catch_up=lambda generation: None)
    with pytest.raises(IntegrityError):
        stuck.unwrap("key:1", blob)
    # A blob naming a generation further on asks nothing
    far = MasterKeys(new, 3).wrap("key:1", b"x")
    with pytest.raises(IntegrityError):
        MasterKeys(old, 1, catch_up=lambda generation: pytest.fail("asked")).unwrap("key:1", far)


def test_the_vault_takes_up_a_newer_generation_for_a_row_mac_once() -> None:
    """A row sealed again under the next generation on another KMA (kma/services/integrity/row_macs.py asks
    `caught_up` before calling it forged): the store's generations taken up, True once, then False."""
    old, new = WrappingKey.generate(), WrappingKey.generate()
    vault = Vault()
    assert not vault.caught_up()  # locked: nothing to take up
    vault.unlock(old, 1)
    names = [{1}]  # the generations the store names

    def take_up() -> bool:
        if names[-1] == {1}:
            return False
        vault.unlock(new, 2, {1: old})
        names.append({1})  # taken: the next call finds nothing new
        return True

    vault.take_up = take_up
    assert not vault.caught_up()
    names.append({1, 2})
    assert vault.caught_up() and vault.generation == 2
    assert not vault.caught_up()
