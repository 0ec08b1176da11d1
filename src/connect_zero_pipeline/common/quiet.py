"""Silence known, harmless third-party warnings so that real ones stay visible.

Installed as a ``kedro.init`` plugin (it runs before Kedro loads any other
plugin) and from ``settings.py``. Each entry names the library and the message
it repeats on every run; nothing else is filtered.
"""

from __future__ import annotations

import logging
import os
import warnings

# (message regex, category, module regex) for warnings.filterwarnings
KNOWN_WARNINGS = [
    # omegaconf deprecates the resolver API that kedro and kedro-mlflow still call.
    (r"register_new_resolver\(\) is deprecated", UserWarning, r"(kedro|kedro_mlflow)\..*"),
    # Generation k reads gen_{k-1}.model: a dataset of another namespace, by design (the
    # names come from Kedro's own namespacing); Kedro warns about any such dotted name.
    (r"One or more dataset names contain '\.' characters", UserWarning, r"kedro\..*"),
]

# (logger name, substring): log records dropped by a filter. mlflow's type-hint
# nags are raised inside its own `catch_warnings(); simplefilter("once")`, which
# overrides warning filters, so they are dropped where Kedro logs warnings.
KNOWN_LOG_RECORDS = [
    ("py.warnings", "Add type hints to the `predict` method"),
    ("py.warnings", "Any type hint is inferred as AnyType"),
    ("py.warnings", "register_new_resolver() is deprecated"),
    ("py.warnings", "One or more dataset names contain '.' characters"),
    # kedro-viz imports a response class that FastAPI deprecates.
    ("py.warnings", "ORJSONResponse is deprecated"),
    # kedro-mlflow swaps its MLflow datasets in the catalog at the start of a run.
    ("kedro.io.data_catalog", "Replacing dataset"),
    # kedro-mlflow announces its resolver at every run.
    ("kedro_mlflow.framework.hooks.mlflow_hook", "Registering new custom resolver"),
    # Kedro's runners: a tip on --async at every run, and on a resume the names of every
    # skipped node in one line (about 1,500 characters); "Running 12 out of 86 nodes" stays.
    *(
        (f"kedro.runner.{r}", text)
        for r in ("sequential_runner", "parallel_runner", "thread_runner")
        for text in ("Use the --async flag", "nodes with existing outputs:")
    ),
    # MLflow logs every failed query of a locked or read-only sqlite store with two
    # tracebacks and its SQL (about 60 lines each); the error it raises reaches the run,
    # which says it once, in one paragraph naming the file (tracking.store_help).
    ("mlflow.store.db.utils", "database is locked"),
    ("mlflow.store.db.utils", "readonly database"),
    # kedro-viz's run hook, at every partial run (a resume, --nodes, --pipelines=export):
    # its event file for the viz is skipped, nothing a user can act on; make viz shows the
    # lineage either way.
    ("kedro_viz.integrations.kedro.run_hooks", "Workflow tracking is disabled"),
]


class _DropContaining(logging.Filter):
    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


class _DropRepeats(logging.Filter):
    """Drops a record whose message is the one its logger passed just before."""

    def __init__(self) -> None:
        super().__init__()
        self.last: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        repeat, self.last = message == self.last, message
        return not repeat


REPEATING_LOGGERS = ("kedro_mlflow.framework.hooks.mlflow_hook",)
"""Loggers whose consecutive identical records say one thing: kedro-mlflow logs "The run
<id> was closed because of an error in the pipeline" once per entry of MLflow's run stack
(one per node that ran)."""

QUIET_ENVIRONMENT = {
    # mlflow draws a tqdm bar for every artifact download (a registered model before a game).
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    # mlflow.start_run looks for a Databricks job to resume, importing IPython to ask for
    # Databricks' dbutils: 0.45 s before every run's first node, off Databricks.
    "MLFLOW_ENABLE_SGC_RUN_RESUMPTION_FOR_DATABRICKS_JOBS": "false",
}
"""Library settings that only turn off output, or a platform's checks that cannot apply
here (a user's own setting wins)."""


def drop_log_records(name: str, texts) -> None:
    """Drop the records of logger ``name`` that contain any of ``texts`` (idempotent)."""
    logger = logging.getLogger(name)
    for text in texts:
        if not any(isinstance(f, _DropContaining) and f.text == text for f in logger.filters):
            logger.addFilter(_DropContaining(text))


def install() -> None:
    """Install the filters (idempotent)."""
    for name, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    for message, category, module in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
    for name, text in KNOWN_LOG_RECORDS:
        drop_log_records(name, [text])
    for name in REPEATING_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropRepeats) for f in logger.filters):
            logger.addFilter(_DropRepeats())
