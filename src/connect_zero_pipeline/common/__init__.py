"""What every layer above ``core`` shares: the project's names (``naming``), its errors and
their words (``errors``), where the project and the user's cache are (``project``), how
``conf/`` is read (``config_loader``), the third-party warnings silenced (``quiet``), and
the one adapter to other libraries' non-public state (``internals``)."""
