"""A KMA meets a blob of a master key generation it has not taken up yet (a rotation begun on another
KMA of the cluster): the vault takes the store's generations up and opens it, instead of refusing
a drive's key until its next look at the store (kma/vault.py `Vault.unwrap`)."""

from __future__ import annotations

import pytest

from kma.crypto import IntegrityError, WrappingKey
from kma.crypto.generations import MasterKeys, UnheldGeneration
from kma.vault import Vault

OLD, NEW = WrappingKey.generate(), WrappingKey.generate()


def test_a_blob_of_a_newer_generation_is_unheld_and_one_of_an_older_is_broken() -> None:
    newer = MasterKeys(NEW, 2, {1: OLD}).wrap("key:a", b"secret")
    with pytest.raises(UnheldGeneration):
        MasterKeys(OLD, 1).unwrap("key:a", newer)
    older = MasterKeys(OLD, 1).wrap("key:b", b"secret")
    with pytest.raises(IntegrityError) as refused:
        MasterKeys(NEW, 2).unwrap("key:b", older)  # destroyed generation: not something to catch up on
    assert not isinstance(refused.value, UnheldGeneration)


def test_the_vault_catches_up_once_and_opens_the_blob() -> None:
    vault = Vault()
    vault.unlock(OLD, 1)
    taken: list[int] = []

    def catch_up() -> bool:  # as master_keys.take_up: the store names generation 2 (and 1 still)
        taken.append(2)
        vault.unlock(NEW, 2, {1: OLD})
        return True

    vault.catch_up = catch_up
    blob = MasterKeys(NEW, 2, {1: OLD}).wrap("key:a", b"secret")
    assert vault.unwrap("key:a", blob) == b"secret"
    assert vault.unwrap("key:a", blob) == b"secret"
    assert taken == [2]  # held from then on
    assert vault.unwrap("key:c", MasterKeys(OLD, 1).wrap("key:c", b"old")) == b"old"


def test_a_store_that_names_no_newer_generation_leaves_the_refusal() -> None:
    vault = Vault()
    vault.unlock(OLD, 1)
    vault.catch_up = lambda: False
    with pytest.raises(UnheldGeneration):
        vault.unwrap("key:a", MasterKeys(NEW, 2).wrap("key:a", b"secret"))
