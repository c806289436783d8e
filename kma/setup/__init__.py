"""First set-up of a KMA (QuickStart): one set-up service that `kma init` and the set-up mode of
`kma serve` (the manager's wizard talks to it) both run. The three modes of `kma init`:

new_cluster.py  a new KMA that creates a new cluster
join.py         a new KMA that joins an existing cluster (the joining side of the join handshake)
restore.py      a new KMA restored from a backup
proof.py        the key split drafted in memory and proven to reconstruct before anything is written
service.py      the set-up modes (a dispatch table) and the set-up session (one-time code, checks)
api.py          the set-up API that `kma serve` offers on an uninitialised data directory
listener.py     set-up mode: a temporary certificate, the code on the console, then normal service
"""
