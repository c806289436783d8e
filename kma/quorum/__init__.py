"""Quorum: the engine that takes a protected operation from submission through its approvals to
its one run (engine.py), what the API shows of pending operations (pending_ops.py), the table of
every kind of protected operation (protected.py) and new key split members' enrolment
(member_enrolment.py). It sits above every feature that defines an operation
(kma/services/quorum/ holds their building blocks).
"""
