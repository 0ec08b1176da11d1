"""MLflow: the project's store (``store``: anchored at the project root, checked writable,
made from a cached empty store) and its model registry (``registry``)."""
