"""The manager's writes to a KMA, named and gathered per area (as Anki's ``aqt/operations``): pages
call ``destroy_key(worker, key_id, comment)``, not an inline lambda over the client.

Each function runs on the write lane's worker thread (:mod:`app.operations`): its first argument,
``worker``, is the :class:`~app.operations.OpContext` it is given; it calls the KMA through
``worker.client`` and returns what the KMA answered. No widget is touched here. Optional settings
(``name=``, ``credentials=``, ...) pass through as ``**options``, as the client names them.
"""
