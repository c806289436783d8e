"""The dispatch table of quorum-protected operations. Each is an `OpType` defined beside the
feature it protects (users: `kma.services.users`; the key split change:
`kma.services.quorum.key_split_change`; ...); this table only lists them.

Not here yet, because the features they protect do not exist yet: restoring a backup and
software upgrades. Each will be one more `OpType` in `OP_TYPES`.
"""

from __future__ import annotations

from kma.cluster.membership import ADD_KMA, REMOVE_KMA, SET_KMA_PASSPHRASE
from kma.cluster.version import RAISE_CLUSTER_VERSION
from kma.services.audit.audit_retention import SHORTEN_RETENTION
from kma.services.quorum.ca_rollover import RENEW_CLUSTER_CA
from kma.services.quorum.key_split_change import CHANGE_KEY_SPLIT
from kma.services.quorum.locking import SET_AUTONOMOUS_UNLOCK, UNLOCK_KMA
from kma.services.quorum.master_rotation import ROTATE_MASTER_KEY
from kma.services.quorum.op_type import OpType
from kma.services.sign_in.directory import SET_DIRECTORY
from kma.services.sign_in.second_factor import TURN_OFF_SECOND_FACTOR
from kma.services.sign_in.second_factor_policy import SET_SECOND_FACTOR_ROLES
from kma.services.transfer.transfer_import_quorum import IMPORT_TRANSFER_FILE
from kma.services.transfer.transfer_partners import REGISTER_TRANSFER_PARTNER
from kma.services.users import CREATE_USER, SET_USER_PASSPHRASE, UPDATE_USER

OP_TYPES: dict[str, OpType] = {
    op.name: op
    for op in (
        CREATE_USER,
        UPDATE_USER,
        SET_USER_PASSPHRASE,
        UNLOCK_KMA,
        SET_AUTONOMOUS_UNLOCK,
        CHANGE_KEY_SPLIT,
        SHORTEN_RETENTION,
        ADD_KMA,
        SET_KMA_PASSPHRASE,
        REMOVE_KMA,
        RAISE_CLUSTER_VERSION,
        ROTATE_MASTER_KEY,
        REGISTER_TRANSFER_PARTNER,
        IMPORT_TRANSFER_FILE,
        SET_DIRECTORY,
        TURN_OFF_SECOND_FACTOR,
        SET_SECOND_FACTOR_ROLES,
        RENEW_CLUSTER_CA,
    )
}
