"""The parameters of every stage: one leaf module per section (``params/<section>.py``, each
importing only ``core`` and :mod:`..executors.settings`), and :mod:`.schema`, which maps the
sections of ``conf/`` to them and parses them."""
