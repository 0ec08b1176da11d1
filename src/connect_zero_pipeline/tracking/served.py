"""``make serve``: a registered model served by MLflow's own scoring server (what ``mlflow
models serve`` runs; :mod:`.served_app`).

MLflow casts a request's tensors to the signature's dtype before a model sees them, so the
registered ONNX model (``board`` int8) took a board of floats as integers without a word
(0.5 became 0), and a board of the wrong shape got MLflow's several-line schema error. So
the served model is a small MLflow Python model around the same ONNX file
(:func:`served_model`): it has no input schema, checks each request itself and refuses a
bad one with one line (HTTP 400, ``INVALID_PARAMETER_VALUE``), then answers with the ONNX
model's ``logits`` and ``value``. The registry keeps the ONNX model as it is.

A board is what the model reads (docs/architecture.md, "Boards for people and models"):
6 rows of 7 cells, row 0 at the top, 1 the side to move's piece, -1 the opponent's, 0 an
empty cell; one board ``[6, 7]`` or several ``[N, 6, 7]``; one that a game can reach (every
piece on the bottom row or on another, the side to move with as many pieces as the
opponent or one fewer), or it is refused in one line. This module imports MLflow:
only the serving command imports it.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
from mlflow import MlflowClient
from mlflow.artifacts import download_artifacts
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import PythonModel

from ..core.board import HEIGHT, WIDTH
from ..core.config.export import INPUT_NAME, OUTPUT_NAMES

ONNX_ARTIFACT = "onnx"
"""The served model's artifact: the folder of the registered version's ONNX file (with its
weights, when they are stored beside it)."""
SOURCE_FILE = "served_from.json"
"""What a served model directory was made from (the model URI and its version), beside it."""


REQUEST = f'{{"{"inputs"}": a board [{HEIGHT}, {WIDTH}] or boards [N, {HEIGHT}, {WIDTH}]}}'
"""What a request's JSON is, in words."""


def payload_problem(body: bytes) -> str | None:
    """What is wrong with a JSON request's body before MLflow parses it, in one line (None:
    a dictionary with ``inputs``, what MLflow reads; its boards are :func:`check_boards`'):
    MLflow would answer ``Found keys in payload: dict_keys([])``."""
    try:
        given = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return f"a request is JSON, {REQUEST}; got {body[:40]!r}"
    if not isinstance(given, dict):
        return f"a request is {REQUEST}; got a JSON {type(given).__name__}"
    if "inputs" not in given:
        return f"a request is {REQUEST}; got the keys {sorted(given)}"
    return None


def check_boards(given: Any) -> np.ndarray:
    """``given`` (what MLflow parsed from a request) as int8 boards ``[N, 6, 7]``, or a
    ``ValueError`` whose one line names what is wrong."""
    if isinstance(given, dict):  # named inputs: the model's one input is its board
        if set(given) != {INPUT_NAME}:
            raise ValueError(f"the model's one input is {INPUT_NAME!r}; got {sorted(given)}")
        given = given[INPUT_NAME]
    try:
        boards = np.asarray(given)
    except ValueError as exc:  # ragged rows
        raise ValueError(f"a board is 6 rows of 7 cells each: {exc}") from None
    if boards.dtype == object or not (
        np.issubdtype(boards.dtype, np.integer) or np.issubdtype(boards.dtype, np.floating)
        or boards.dtype == np.bool_
    ):  # fmt: skip
        kind = "text" if boards.dtype.kind in "US" else f"{boards.dtype} values"
        raise ValueError(f"a board's cells are numbers (-1, 0 or 1); got {kind}")
    if boards.shape == (HEIGHT, WIDTH):
        boards = boards[None]
    if boards.ndim != 3 or boards.shape[1:] != (HEIGHT, WIDTH):
        raise ValueError(f"a board is {HEIGHT} rows of {WIDTH} cells ([{HEIGHT}, {WIDTH}] or "
                         f"[N, {HEIGHT}, {WIDTH}]); got shape {list(boards.shape)}")  # fmt: skip
    bad = ~np.isin(boards, (-1, 0, 1))
    if bad.any():
        where = [int(i) for i in np.argwhere(bad)[0]]
        value = boards[tuple(where)].item()
        raise ValueError(f"a cell is -1, 0 or 1 (1: the side to move's piece); got {value!r} "
                         f"at [board, row, column] {where}")  # fmt: skip
    boards = boards.astype(np.int8)
    _check_reachable(boards)
    return boards


def _check_reachable(boards: np.ndarray) -> None:
    """A ``ValueError`` naming the first board a game cannot reach: a piece with an empty cell
    under it (row 0 is the top), or piece counts other than the side to move's equal to the
    opponent's or one fewer."""
    filled = boards != 0  # [N, 6, 7]
    floating = filled[:, :-1] & ~filled[:, 1:]  # a piece over an empty cell (the row below)
    if floating.any():
        board, row, column = (int(i) for i in np.argwhere(floating)[0])
        raise ValueError(f"board {board}: the piece at row {row}, column {column} floats over "
                         f"an empty cell (row 0 is the top; pieces rest on the bottom row or "
                         "on others)")  # fmt: skip
    own = (boards == 1).sum(axis=(1, 2))  # [N]
    other = (boards == -1).sum(axis=(1, 2))  # [N]
    bad = np.flatnonzero((own != other) & (own != other - 1))
    if bad.size:
        board = int(bad[0])
        raise ValueError(f"board {board}: {int(own[board])} pieces of the side to move (1) and "
                         f"{int(other[board])} of the opponent (-1); a game gives the side to "
                         "move as many as the opponent or one fewer")  # fmt: skip


class BoardRefused(MlflowException):
    """A request's board refused in one line (HTTP 400, ``INVALID_PARAMETER_VALUE``).

    MLflow's scoring server puts the data it parsed in front of the message of an error the
    model raises (``Failed to predict data '<the array, over several lines>'``) by assigning
    the exception's ``message``: this one keeps its own line."""

    def __init__(self, line: str):
        super().__init__(line, INVALID_PARAMETER_VALUE)
        self._line = line

    @property
    def message(self) -> str:
        return self._line

    @message.setter
    def message(self, value: str) -> None:  # the server's prefix: the line stays as it is
        pass


@contextlib.contextmanager
def _any_input_unsaid():
    """The warnings of the block, less MLflow's note that an ``Any`` type hint is not
    validated (at the class's definition, its save and its load; MLflow shows it inside a
    ``catch_warnings`` of its own, so no filter reaches it): the served model checks its
    input itself (:func:`check_boards`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        yield
    for said in caught:
        if "Any type hint is inferred as AnyType" not in str(said.message):
            warnings.showwarning(said.message, said.category, said.filename, said.lineno)


with _any_input_unsaid():  # the "any input" hint: MLflow passes the data as it parsed it

    class BoardModel(PythonModel):
        """The ONNX model behind a check of each request (:func:`check_boards`)."""

        def load_context(self, context) -> None:
            import onnxruntime as ort  # noqa: PLC0415 (onnxruntime: when the server loads it)

            (path,) = Path(context.artifacts[ONNX_ARTIFACT]).glob("*.onnx")  # and its weights
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

        def predict(self, context, model_input: list[Any], params: dict | None = None):
            try:
                boards = check_boards(model_input)
            except ValueError as exc:
                raise BoardRefused(str(exc)) from None
            logits, value = self.session.run(list(OUTPUT_NAMES), {INPUT_NAME: boards})
            return {OUTPUT_NAMES[0]: logits, OUTPUT_NAMES[1]: value}


def served_model(model_uri: str, folder: Path, store: str) -> Path:
    """A served model directory for model ``model_uri`` (``models:/name@alias`` or
    ``models:/name/version``) of the registry at ``store`` (an MLflow store URI, its
    tracking and registry store) under ``folder``: one per registered version, made once
    (``folder/<name>-v<version>``), its source in :data:`SOURCE_FILE`."""
    client = MlflowClient(tracking_uri=store, registry_uri=store)
    name, version = _registered(client, model_uri)
    target = folder / f"{name}-v{version}"
    if (target / "MLmodel").is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".making-") as work:
        where = client.get_model_version_download_uri(name, version)
        source = Path(download_artifacts(artifact_uri=where, dst_path=work, tracking_uri=store))
        onnx_files = sorted(source.rglob("*.onnx"))
        if not onnx_files:
            raise ValueError(f"{model_uri} (version {version}) holds no ONNX file: nothing to "
                             "serve")  # fmt: skip
        staging = Path(work) / "served"
        with _any_input_unsaid():  # the model as code (served_code.py), not pickled
            mlflow.pyfunc.save_model(
                str(staging),
                python_model=str(Path(__file__).with_name("served_code.py")),
                artifacts={ONNX_ARTIFACT: str(onnx_files[0].parent)},  # with external weights
                pip_requirements=["onnxruntime", "numpy"],
            )
        (staging / SOURCE_FILE).write_text(json.dumps({"model_uri": model_uri, "name": name,
                                                       "version": version}))  # fmt: skip
        staging.rename(target)  # whole or not at all
    return target


def _registered(client: MlflowClient, model_uri: str) -> tuple[str, str]:
    """``(name, version)`` of a registry URI in ``client``'s registry, or a ``ValueError``
    naming it."""
    if not model_uri.startswith("models:/"):
        raise ValueError(f"MODEL={model_uri!r}: a registered model, models:/<name>@<alias> or "
                         "models:/<name>/<version>")  # fmt: skip
    path = model_uri.removeprefix("models:/")
    try:
        if "@" in path:
            name, alias = path.split("@", 1)
            return name, str(client.get_model_version_by_alias(name, alias).version)
        name, _, version = path.partition("/")
        return name, str(client.get_model_version(name, version).version)
    except MlflowException as exc:
        raise ValueError(f"MODEL={model_uri!r} is not in this project's registry: "
                         f"{str(exc).splitlines()[0]}") from None  # fmt: skip
