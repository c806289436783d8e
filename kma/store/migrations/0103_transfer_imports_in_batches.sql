-- Transfer imports under quorum and in batches (issue 40, docs/transfer.md).
--
-- A key policy may ask that every import into its key groups be a quorum operation
-- (`import_transfer_file`): one Security Officer alone does not bring another cluster's keys in.
ALTER TABLE key_policies ADD COLUMN import_needs_quorum INTEGER NOT NULL DEFAULT 0;

-- An import is written in batches (kma/services/transfer_import_writer.py): its file's row is
-- 'importing' from the first batch until the last, which makes it 'done'. A row left 'importing'
-- (the KMA stopped halfway) is finished by importing the same file again into the same key group;
-- `approved_by_op` is the quorum operation that approved it, so finishing it needs no new quorum.
ALTER TABLE transfer_files ADD COLUMN state TEXT NOT NULL DEFAULT 'done'
    CHECK (state IN ('importing', 'done'));
ALTER TABLE transfer_files ADD COLUMN key_group_id TEXT;
ALTER TABLE transfer_files ADD COLUMN approved_by_op TEXT;

-- The file of an import waiting for its quorum, held in parts of at most 1 MiB (it is ciphertext
-- only this cluster opens, signed by the partner: the approvers' KMA checks it all again when the
-- quorum is reached). It goes when its operation leaves 'pending', however it leaves.
CREATE TABLE transfer_held_files (
    op_id    TEXT NOT NULL,
    part     INTEGER NOT NULL,
    content  BLOB NOT NULL,
    PRIMARY KEY (op_id, part)
);

CREATE TRIGGER transfer_held_files_end AFTER UPDATE OF state ON pending_quorum_ops
WHEN NEW.state <> 'pending'
BEGIN
    DELETE FROM transfer_held_files WHERE op_id = NEW.id;
END;
