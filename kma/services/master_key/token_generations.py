"""A KMA whose HSM token holds the cluster's master key, through master key rotations
(docs/hsm.md#master-key-rotation-with-an-hsm-in-a-cluster).

The vault holds each master key generation it needs as a key object of its own in the token; a
rotation's new generation goes into the token when the KMA takes it up (kma/vault.py,
`hold_in_token`). What `settle` keeps in step with the vault, at each round of the re-wrap worker
(kma/services/master_key/master_rewrap.py) and before this KMA records the generation it holds
(`kmas.master_generation`, which the rotation's end waits for):

- kma.toml's `[hsm]` names the current generation's key object (`key_label`), and while a rotation
  still needs the one before, that one too (`previous_key_label`), so a quorum unlock after a restart
  finds both;
- once no generation held needs the previous key object (the rotation has ended), it is destroyed,
  the audit trail says so (`kma.hsm_master_key_destroyed`), and kma.toml forgets its label.

Each step is done again at the next round until it holds: a KMA killed anywhere finishes at its
next unlock, without a second key object (the vault finds the one it put) and without destroying a
key object a generation still needs.
"""

from __future__ import annotations

import dataclasses

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.crypto.hsm_settings import HsmSettings, write_hsm_table


def settle(kma: Appliance) -> None:
    """kma.toml's `[hsm]` and the token's key objects in step with the generations the vault holds
    (see the module); nothing without a token holding the cluster's master key, or while locked."""
    hsm = kma.vault.hsm
    labels = kma.vault.token_labels()
    if hsm is None or not labels:
        return
    previous = hsm.previous_key_label
    if previous and previous not in labels.values():
        _destroy(kma, hsm, previous, max(labels))
        hsm = _write(kma, dataclasses.replace(hsm, previous_key_label=""))
    current = labels[max(labels)]
    older = [label for generation, label in sorted(labels.items()) if generation != max(labels)]
    if older:
        previous = older[-1]
    elif hsm.key_label not in labels.values():
        previous = hsm.key_label  # an older generation's object: destroyed at the next round
    else:
        previous = hsm.previous_key_label
    wanted = dataclasses.replace(hsm, key_label=current, previous_key_label=previous)
    if wanted != hsm:
        _write(kma, wanted)


def _write(kma: Appliance, settings: HsmSettings) -> HsmSettings:
    write_hsm_table(kma.data_dir.identity_file, settings)
    kma.vault.hsm = settings  # what the next unlock and the core security backup name
    return settings


def _destroy(kma: Appliance, hsm: HsmSettings, label: str, generation: int) -> None:
    destroyed = kma.vault.destroy_token_key(label)
    kma.audit(
        kma.itself,
        "kma.hsm_master_key_destroyed",
        f"destroyed the key object '{label}' of an older master key generation in its HSM "
        f"{hsm.token_name}: no generation it holds needs it (now generation {generation})"
        if destroyed
        else f"the key object '{label}' of an older master key generation was already gone from its HSM "
        f"{hsm.token_name} (now generation {generation})",
        condition=Condition.SUCCESS,
        subject=("kma", kma.kma_id),
        retention=Retention.LONG,
        event_class="security",
    )
