"""The cluster: the KMAs that share one store, and this KMA as one node of it.

membership.py   adding and removing KMAs (quorum operations), voters, the one-time KMA passphrase
join.py         the cluster's side of the join handshake (the joining machine's side: kma/setup/join.py)
watch.py        what each KMA does about changes made through other KMAs (lock, trust, strangers)
topology.py     the cluster's shape: sites, KMAs, their nodes, failure tolerance
node_config.py  this node's files; rqlited.py its rqlite process; trust.py whom its node trusts
store.py        the store of a data directory (embedded, or this node of the cluster)
convert.py, hsm_first_node.py   an embedded KMA becomes the first node; witness.py a voter that serves no one
"""
