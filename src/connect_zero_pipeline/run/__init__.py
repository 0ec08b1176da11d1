"""A run's life: its id and manifest, whether it is alive, what a resume may change, the
versions it reads and writes, where it starts, and the hook that records it.

One module per job:

- :mod:`.manifest`: run ids and the manifests in ``data/runs/``;
- :mod:`.liveness`: whether a ``running`` run's process is still there;
- :mod:`.rules`: what a resume and an extension may change, and where they write;
- :mod:`.pinning`: a run reads only its own versions; a repeated run writes nothing;
- :mod:`.start`: ``model.start_from``, resolved once;
- :mod:`.ladder_plan`: what a ladder plays (its players, its caches), planned once;
- :mod:`.context`: :class:`.context.RunContext`, one run as its session plans it;
- :mod:`.messages`: the error line a manifest records.

The hook that records a run during its session is the session's
(:class:`..session.run_life.RunLife`), beside the run's other hooks.

:class:`..session.project_session.ProjectSession` plans the :class:`.context.RunContext`
and hands it to the hooks it registers for its run; the datasets get it through the catalog
(:func:`.pinning.pin_outputs`), the command line through the error that ended a run
(:func:`..common.errors.run_of`). Nothing reads a module-level run state.
"""
