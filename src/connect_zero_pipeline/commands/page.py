"""``play --web``: serve the exported play page on 127.0.0.1, with the solver's ``/analyze``.

The page folder is ``--dir``, else the latest version of the catalog entry ``play_page``
(written by ``kedro run --pipelines=export``), else a page of the shipped pretrained model.
``--port 0`` picks a free port; the address is printed on the first line. ``/analyze?moves=
4453`` answers the perfect solver's verdict on every column (:mod:`.verdicts`) within the
server's node budget.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from .. import web
from ..core.bitboard import is_terminal, moves_to_bitboards, quote_moves
from ..core.export import onnx_info
from ..tracking.store import LOOPBACK
from . import interrupts
from .model_source import PRETRAINED, NoVersionError, load_catalog_entry
from .model_source import CommandError as PlayError
from .verdicts import solver_answer

IDLE_TIMEOUT = 10.0
"""Seconds the page server waits for a client: on an idle connection, and for the whole of a
request's line and headers (a client that trickles them in is cut off too)."""
DEFAULT_PAGE_ENTRY = "play_page"
MAX_REQUEST_LINE = 65536
"""http.server's limit on a request line (its ``_MAXLINE``): longer ones get 414."""


def resolve_page(page_dir: str | None) -> Path:
    """The page folder to serve: ``--dir`` or the latest ``play_page`` version."""
    if page_dir is not None:
        folder = Path(page_dir)
    else:
        try:
            folder = Path(load_catalog_entry(DEFAULT_PAGE_ENTRY))
        except NoVersionError as exc:
            if PRETRAINED.is_file():
                return _pretrained_page()
            raise PlayError(
                f"no play page exported yet: {exc}. "
                f"Export one with: kedro run --pipelines=export (or pass --dir PATH)"
            ) from exc
    if not (folder / "index.html").is_file():
        raise PlayError(f"{folder} is not a play page folder: it has no index.html")
    return folder


def _pretrained_page() -> Path:
    """A play page of the shipped pretrained model, built in a temporary folder."""
    data = PRETRAINED.read_bytes()
    folder = Path(tempfile.mkdtemp(prefix="connect-zero-play-"))
    interrupts.cleanup(shutil.rmtree, folder, True)  # at exit, Ctrl-C or SIGTERM
    try:
        files = web.page_files(data, onnx_info(data), web.ort_web_dist())
    except FileNotFoundError as exc:  # onnxruntime-web not fetched (make web)
        raise PlayError(str(exc)) from exc
    for name, content in files.items():
        (folder / name).write_bytes(content)
    print("No play page exported in this project yet: serving the shipped pretrained model "
          "(`make run` trains and exports your own).", file=sys.stderr)  # fmt: skip
    return folder


class _PageHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with the right types for onnxruntime-web, never cached, quiet."""

    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".onnx": "application/octet-stream",
        ".json": "application/json",
    }

    solver_nodes: ClassVar[int] = 0
    """The solver's node budget for ``/analyze`` (0: no solver: 404, the page works without)."""
    runtime: ClassVar[Path | None] = None
    """Where onnxruntime-web's files are served from when the page folder lacks them (a page
    exported on a machine without them); None: the folder's own."""

    def translate_path(self, path: str) -> str:
        local = super().translate_path(path)
        name = Path(local).name
        if self.runtime is not None and name in web.ORT_FILES and not Path(local).exists():
            return str(self.runtime / name)
        return local

    _solver_lock = threading.Lock()  # one solver (one transposition table) for all threads

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/analyze":
            self._analyze()
            return
        super().do_GET()

    def do_HEAD(self) -> None:  # /analyze's headers as its GET has them, without the body
        if self.path.split("?", 1)[0] == "/analyze":
            self._analyze()
            return
        super().do_HEAD()

    def _not_allowed(self) -> None:
        """Any method but GET and HEAD: 405, naming what the address answers (``/analyze`` in
        JSON, as its other answers); a body sent with it is not read, and the connection
        closes."""
        self.close_connection = True
        if self.path.split("?", 1)[0] == "/analyze":
            self._json(405, {"error": f"/analyze answers GET and HEAD only, not {self.command}"},
                       {"Allow": "GET, HEAD"})  # fmt: skip
        else:
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed

    def _analyze(self) -> None:
        """``/analyze?moves=4453``: what the perfect solver proves of each column's score for
        the side to move, within the node budget (:func:`solver_answer`). Every answer is
        JSON; an error quotes at most 80 characters of the moves (:func:`quote_moves`)."""
        if not self.solver_nodes:
            self.send_error(404, "no solver behind this page (play --web --solver-nodes N)")
            return
        # http.server decodes the request line as Latin-1: raw UTF-8 gets its own bytes back
        query = urlsplit(self.path).query.encode("latin-1").decode("utf-8", "replace")
        moves = (parse_qs(query).get("moves") or [""])[0]
        try:
            position, mask = moves_to_bitboards(moves)
            if is_terminal(position, mask):
                raise ValueError(f"the game is over after {quote_moves(moves)}")
        except ValueError as exc:  # the reason goes in the body: a status line is Latin-1
            self._json(400, {"error": f"moves: {exc}"})
            return
        with self._solver_lock:
            answer = solver_answer(position, mask, self.solver_nodes)
        self._json(200, answer)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        """An error about ``/analyze`` in JSON, as its other answers, whatever found it (an
        oversized request line included: http.server's 414 comes before any parsing); any
        other path's, http.server's HTML page; a request line that is no request at all (no
        method and path to read), a JSON line too: no page asked for one."""
        garbage = getattr(self, "command", None) is None and code == 400
        if garbage:  # http.server took it for HTTP/0.9, whose answers have no status line
            self.request_version = "HTTP/1.0"
        if not self._asks_analyze() and not garbage:
            super().send_error(code, message, explain)
            return
        if code == 414:
            message = (f"the request line is over {MAX_REQUEST_LINE} bytes; a game has at most "
                       f"42 moves")  # fmt: skip
        self.close_connection = True
        self._json(code, {"error": message or self.responses[code][0]}, {"Connection": "close"})

    def _asks_analyze(self) -> bool:
        """Whether this request's line (as received, parsed or not) targets ``/analyze``."""
        fields = getattr(self, "raw_requestline", b"")[:1024].split(maxsplit=2)
        return len(fields) > 1 and fields[1].split(b"?", 1)[0] == b"/analyze"

    def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        """Answer ``payload`` as UTF-8 JSON with ``status`` and its standard reason phrase
        (never a user's text: ``http.server`` writes the status line as Latin-1)."""
        body = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_head(self):
        try:
            return super().send_head()
        except ValueError:  # a path the filesystem cannot name (e.g. /%00)
            self.send_error(400, "Bad request path")
            return None

    def log_message(self, format: str, *args) -> None:
        pass

    def handle_one_request(self) -> None:
        """One request, whose line and headers must all arrive within ``timeout`` seconds:
        the socket timeout alone restarts with every byte, so a timer cuts the connection."""
        self._cut_off = False
        self._deadline = threading.Timer(self.timeout, self._cut)
        self._deadline.daemon = True
        self._deadline.start()
        try:
            super().handle_one_request()
        finally:
            self._deadline.cancel()

    def parse_request(self) -> bool:
        ok = super().parse_request()  # the request line's fields, then the headers
        self._deadline.cancel()  # the request is in: sending the file is not limited
        if self._cut_off:
            self.close_connection = True
            return False
        return ok

    def _cut(self) -> None:
        self._cut_off = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def warm_solver(solver_nodes: int) -> None:
    """Answer the empty board once, under the solver's lock, while the page loads: the
    solver's compiled code, its table and the opening book are then ready for the first
    ``/analyze`` (which otherwise pays about a second for them), and that answer is kept."""
    with _PageHandler._solver_lock:
        solver_answer(*moves_to_bitboards(""), solver_nodes)


class _PageServer(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # listen backlog (socketserver's default is 5)
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that went away (closed tab, cancelled download) is not an error."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def make_server(
    directory: Path, port: int = 0, idle_timeout: float = IDLE_TIMEOUT, solver_nodes: int = 0
) -> http.server.ThreadingHTTPServer:
    """A threaded HTTP server for ``directory`` on 127.0.0.1 only (``port`` 0: a free port).

    Idle connections, and requests whose line and headers take longer, close after
    ``idle_timeout`` seconds; a client that disconnects is not reported, and a request
    path that cannot name a file gets ``400`` instead of a traceback. ``/analyze`` answers
    with the perfect solver's scores within ``solver_nodes`` nodes (0: 404). A page exported
    without onnxruntime-web gets this machine's (fetched by ``make web``), or the error says
    so before the server starts.
    """
    runtime = None
    if not web.has_runtime(directory):  # exported without onnxruntime-web: this machine's
        try:
            runtime = web.ort_web_dist()
        except (FileNotFoundError, ValueError) as exc:
            raise PlayError(f"{directory} was exported without onnxruntime-web, and {exc}") from exc
    handler_class = type("PageHandler", (_PageHandler,), {"timeout": idle_timeout,
                         "solver_nodes": solver_nodes, "runtime": runtime})  # fmt: skip
    handler = functools.partial(handler_class, directory=str(directory))
    return _PageServer((LOOPBACK, port), handler)


def serve(directory: Path, port: int, solver_nodes: int = 0) -> int:
    try:
        server = make_server(directory, port, solver_nodes=solver_nodes)
    except OSError as exc:
        raise PlayError(f"cannot listen on {LOOPBACK}:{port}: {exc.strerror}") from exc
    url = f"http://{LOOPBACK}:{server.server_address[1]}/"
    print(f"Serving the play page at {url} (from {directory}); Ctrl-C to stop", flush=True)
    if solver_nodes:
        threading.Thread(target=warm_solver, args=(solver_nodes,), name="solver-warm-up",
                         daemon=True).start()  # fmt: skip
    if interrupts.installed():
        interrupts.install("Stopped.", 0)  # Ctrl-C is how a server is stopped: not an error
        interrupts.stop_with_make()
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # in-process callers, which install no handler
        print("\nStopped.", flush=True)
    finally:
        server.server_close()
    return 0
