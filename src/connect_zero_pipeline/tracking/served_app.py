"""The ASGI app ``make serve`` runs with uvicorn: MLflow's own scoring server (what ``mlflow
models serve`` runs, :func:`mlflow.pyfunc.scoring_server.init`) for the served model, behind
one check of the request's JSON (:func:`.served.payload_problem`): MLflow parses a request
before the model sees it and answers a body that is not ``{"inputs": ...}`` with its own
words (``Found keys in payload: dict_keys([])``); this answers it in one line, as the model
answers a bad board (HTTP 400, ``INVALID_PARAMETER_VALUE``).

``uvicorn --factory connect_zero_pipeline.tracking.served_app:make_app`` with the served
model's folder in :data:`MODEL_ENV` (``commands/serve.py`` starts it so).
"""

from __future__ import annotations

import json
import os

from .served import payload_problem

MODEL_ENV = "CZ_SERVED_MODEL"
"""The environment variable that names the served model's folder."""


class PayloadCheck:
    """An ASGI middleware: a JSON ``POST /invocations`` whose body is not a request is refused
    in one line (:func:`.served.payload_problem`); everything else reaches ``app``, the body
    as it came."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/invocations":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        kind = headers.get(b"content-type", b"").split(b";")[0].strip()
        problem = payload_problem(body) if kind == b"application/json" else None
        if problem is not None:
            answer = json.dumps({"error_code": "INVALID_PARAMETER_VALUE",
                                 "message": problem}).encode()  # fmt: skip
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(answer)).encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": answer})
            return None
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


def make_app():
    """The app: the served model's folder (:data:`MODEL_ENV`) in MLflow's scoring server,
    behind :class:`PayloadCheck`."""
    import mlflow.pyfunc  # noqa: PLC0415 (MLflow: when the server starts)
    from mlflow.pyfunc import scoring_server  # noqa: PLC0415

    return PayloadCheck(scoring_server.init(mlflow.pyfunc.load_model(os.environ[MODEL_ENV])))
