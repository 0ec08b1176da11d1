"""Where the work runs: this process, local worker processes, or a Ray cluster.

``core`` holds the pure functions that play one self-play shard
(:func:`~connect_zero_pipeline.core.selfplay.self_play` with ``shard_index``)
and solve one chunk of positions
(:func:`~connect_zero_pipeline.core.labelling.solve_chunk`). This package runs
many of them at once: :mod:`.local` on every core of this machine, :mod:`.ray`
on a Ray cluster. None of it changes a result: a generation's table and a
labelled set are the same on any executor.

A stage's ``node`` parameters (:class:`~.settings.NodeSettings`) choose the executor;
:mod:`.dispatch` runs a generation or a labelling on it. This package's ``__init__``
imports nothing: :mod:`.settings` is read when parameters are checked, before anything
heavy is imported.
"""
