"""A run as Kedro runs it: the project's session (``project_session``), the hooks of every
session (``hooks``), the runner (``runner``), and the run's record in MLflow: one child run
per generation (``generation_runs``) and the summary (``summary``)."""
