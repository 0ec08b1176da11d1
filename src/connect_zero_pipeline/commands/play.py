"""``python -m connect_zero_pipeline play``: play the trained agent in the terminal or a browser.

Terminal::

    python -m connect_zero_pipeline play [--model PATH | --dataset NAME] [--sims N]
                                         [--first | --second] [--moves 4453]

The model is ``--model PATH`` (a model file, or a versioned dataset folder:
its latest version), else the latest version of the catalog entry
``--dataset`` (default ``latest_model``, the export pipeline's input), read
from the Kedro project around the working directory without running a
pipeline. ``--sims 0`` plays the raw policy greedily; ``--sims N`` searches
``N`` simulations of the project's batched MCTS before every move.

After each of its moves the agent shows its analysis (:mod:`.board`): per column the
network's policy, the search's visits and Q, and the perfect solver's verdict on each column
(its exact score, or what it proved within ``--solver-nodes`` nodes a column: win, loss, at
least or at most a draw; 0: no solver), then its value in words. ``u`` undoes the person's last
move (and the agent's reply); a finished game offers a rematch with the colours swapped.
On a colour terminal the stones are coloured, the last move underlined and the winning four
in reverse video (``NO_COLOR`` turns colours off).

Browser::

    python -m connect_zero_pipeline play --web [--port N] [--dir PATH]

serves a play page folder on 127.0.0.1 only (default: the latest version of
the catalog entry ``play_page``, written by ``kedro run --pipelines=export``).
``--port 0`` picks a free port; the address is printed on the first line.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import socket
import sys
import threading
from pathlib import Path
from typing import ClassVar

from ..tracking import LOOPBACK
from . import interrupts
from .board import SOLVER_LEGEND, Analysis, analysis, grid, verdict
from .model_source import (
    PRETRAINED,
    NoVersionError,
    add_model_options,
    load_catalog_entry,
    resolve_model,
    run_command,
)
from .model_source import CommandError as PlayError

IDLE_TIMEOUT = 10.0
"""Seconds the page server waits for a client: on an idle connection, and for the whole of a
request's line and headers (a client that trickles them in is cut off too)."""
DEFAULT_PAGE_ENTRY = "play_page"


# ---------------------------------------------------------------------------
# Finding the model (see .model_source) and the page
# ---------------------------------------------------------------------------


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
    import shutil
    import tempfile

    from .. import web
    from ..core.export import onnx_info

    data = PRETRAINED.read_bytes()
    folder = Path(tempfile.mkdtemp(prefix="connect-zero-play-"))
    interrupts.cleanup(shutil.rmtree, folder, True)  # at exit, Ctrl-C or SIGTERM
    try:
        files = web.page_files(data, onnx_info(data))
    except FileNotFoundError as exc:  # onnxruntime-web not fetched (make web)
        raise PlayError(str(exc)) from exc
    for name, content in files.items():
        (folder / name).write_bytes(content)
    print("No play page exported in this project yet: serving the shipped pretrained model "
          "(`make run` trains and exports your own).", file=sys.stderr)  # fmt: skip
    return folder


# ---------------------------------------------------------------------------
# Serving the page
# ---------------------------------------------------------------------------


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
    _solver_lock = threading.Lock()  # one solver (one transposition table) for all threads

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/analyze":
            self._analyze()
            return
        super().do_GET()

    def _analyze(self) -> None:
        """``/analyze?moves=4453``: what the perfect solver proves of each column's score for
        the side to move, within the node budget (:func:`solver_answer`)."""
        from urllib.parse import parse_qs, urlsplit

        from ..core.bitboard import is_terminal, moves_to_bitboards

        if not self.solver_nodes:
            self.send_error(404, "No solver behind this page")
            return
        moves = (parse_qs(urlsplit(self.path).query).get("moves") or [""])[0]
        try:
            position, mask = moves_to_bitboards(moves)
            if is_terminal(position, mask):
                raise ValueError("the game is over")
        except ValueError as exc:  # the reason goes in the body: a status line is Latin-1
            self._json(400, {"error": f"moves={moves!r}: {exc}"})
            return
        with self._solver_lock:
            answer = solver_answer(position, mask, self.solver_nodes)
        self._json(200, answer)

    def _json(self, status: int, payload: dict) -> None:
        """Answer ``payload`` as UTF-8 JSON with ``status`` and its standard reason phrase
        (never a user's text: ``http.server`` writes the status line as Latin-1)."""
        import json

        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
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
    with the perfect solver's scores within ``solver_nodes`` nodes (0: 404).
    """
    handler_class = type("PageHandler", (_PageHandler,),
                         {"timeout": idle_timeout, "solver_nodes": solver_nodes})  # fmt: skip
    handler = functools.partial(handler_class, directory=str(directory))
    return _PageServer((LOOPBACK, port), handler)


def serve(directory: Path, port: int, solver_nodes: int = 0) -> int:
    try:
        server = make_server(directory, port, solver_nodes=solver_nodes)
    except OSError as exc:
        raise PlayError(f"cannot listen on {LOOPBACK}:{port}: {exc.strerror}") from exc
    url = f"http://{LOOPBACK}:{server.server_address[1]}/"
    print(f"Serving the play page at {url} (from {directory}); Ctrl-C to stop", flush=True)
    if interrupts.installed():
        interrupts.install("Stopped.", 0)  # Ctrl-C is how a server is stopped: not an error
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # in-process callers, which install no handler
        print("\nStopped.", flush=True)
    finally:
        server.server_close()
    return 0


# ---------------------------------------------------------------------------
# Terminal game
# ---------------------------------------------------------------------------


class _Agent:
    """Greedy policy (``sims == 0``) or batched MCTS (``sims > 0``) on one game."""

    def __init__(self, model, sims: int):
        from ..core.inference import torch_evaluate_fn
        from ..core.mcts import MCTSConfig

        self.evaluate_fn = torch_evaluate_fn(model, "cpu")
        self.config = MCTSConfig(sims=sims) if sims > 0 else None

    def analyze(self, position: int, mask: int) -> Analysis:
        """The move it plays and why: the network's policy and value, and the search's visits
        and Q per column (side to move's view)."""
        import torch

        from ..core.bitboard import State, legal_mask, popcount, to_boards
        from ..core.mcts import chosen_move, search
        from ..core.players import masked_logits, sample_move

        state = State(
            torch.tensor([position]), torch.tensor([mask]), torch.tensor([popcount(mask)])
        )
        legal = legal_mask(state)  # (1, 7)
        logits, value = self.evaluate_fn(to_boards(state))  # (1, 7), (1,)
        policy = torch.softmax(masked_logits(logits, legal), 1)[0].tolist()
        if self.config is None:
            col = int(sample_move(logits, legal, temperature=0)[0])
            return Analysis(col, policy, float(value[0]))
        result = search(state, self.evaluate_fn, self.config)
        visits = result.visit_counts.float()  # (1, 7)
        col = int(chosen_move(result, legal)[0])  # as MCTSPlayer plays
        tree = result.tree
        children = tree.local(tree.children[0, 0])  # (7,) the root's children
        q: list[float | None] = []
        for c in range(7):
            node = int(children[c])
            n = float(tree.visits[0, node]) if node < tree.num_nodes else 0.0
            q.append(float(tree.value_sum[0, node]) / n if n > 0 else None)
        return Analysis(col, policy, float(result.root_value[0]),
                        [int(n) for n in visits[0].tolist()], q)  # fmt: skip


SOLVER_NODES = 3_000_000
"""The solver's default node budget a column: about 1.5 s a position at most on a 2-core
machine (docs/play.md), where it proves the outcome of most columns from about ply 4."""


def solver_bounds(position: int, mask: int, max_nodes: int) -> list[tuple[int, int] | None]:
    """What the perfect solver proves of each column's score within ``max_nodes`` nodes a
    column (:func:`..core.solver.column_bounds`); exact at once for a position of the
    project's solver cache (the labelled sets' positions)."""
    import numpy as np

    from ..core.labelling import position_keys
    from ..core.solver import FULL_COLUMN, column_bounds

    cache = _solver_cache()
    if cache is not None:
        found, scores = cache.lookup(
            position_keys(np.array([position], np.uint64), np.array([mask], np.uint64))
        )
        if found[0]:
            return [None if s == FULL_COLUMN else (int(s), int(s)) for s in scores[0]]
    return column_bounds(position, mask, max_nodes)


@functools.lru_cache(maxsize=1)
def _solver_cache():
    """The project's solver cache (``pons.cache_dir``), read once; None outside a project."""
    from ..core.labelling import SolvedCache
    from ..params.pons import PonsConfig
    from ..project import project_root

    project, folder = project_root(), PonsConfig().cache_dir
    if project is None or not folder or not (project / folder).is_dir():
        return None
    return SolvedCache(project / folder)


def solver_answer(position: int, mask: int, max_nodes: int) -> dict:
    """``/analyze``'s answer: per column the exact ``scores`` (null where not proved, or
    full), the proved ``bounds`` ([low, high] or null), the ``verdicts`` as the page shows
    them, and ``solved`` (every score exact)."""
    bounds = solver_bounds(position, mask, max_nodes)
    return {
        "scores": [b[0] if b is not None and b[0] == b[1] else None for b in bounds],
        "bounds": [list(b) if b is not None else None for b in bounds],
        "verdicts": [verdict(b) for b in bounds],
        "solved": all(b is None or b[0] == b[1] for b in bounds),
        "legend": SOLVER_LEGEND,
    }


def _describe_model(model) -> str:
    """``ResNet 3x32`` / ``MLP 128-128-64``, plus the generation when the checkpoint has one."""
    cfg = getattr(model, "config", {}) or {}
    if cfg.get("arch") == "resnet":
        text = f"ResNet {cfg['blocks']}x{cfg['channels']}"
    elif cfg.get("arch") == "mlp":
        text = "MLP " + "-".join(map(str, cfg["hidden"]))
    else:
        text = type(model).__name__
    generation = (getattr(model, "meta", None) or {}).get("generation")
    return text if generation is None else f"{text}, generation {generation}"


PROMPT = "Your move (1-7, u to undo, q to quit): "


def _ask(mask: int, undo: bool, stdin: interrupts.LineReader, out) -> int | str | None:
    """A legal 0-based column, ``"undo"`` (when ``undo``), or ``None`` on EOF or 'q';
    re-prompts on bad input."""
    from ..core.bitboard import legal_columns

    while True:
        text = stdin.read_line(PROMPT, out)
        if text is None:  # end of input (Ctrl-D)
            print(file=out)
            return None
        text = text.strip()
        if text.lower() in {"q", "quit", "exit"}:
            return None
        if text.lower() in {"u", "undo"}:
            if undo:
                return "undo"
            print("Nothing of yours to undo yet.", file=out, flush=True)
            continue
        if not (len(text) == 1 and "1" <= text <= "7"):
            print(f"Please enter a column from 1 to 7 (got {text!r}).", file=out, flush=True)
            continue
        col = int(text) - 1
        if col not in legal_columns(mask):
            print(f"Column {text} is full; choose another.", file=out, flush=True)
            continue
        return col


def play_terminal(
    model, description: str, sims: int, human_first: bool, moves: str, solver_nodes: int = 0
) -> int:
    """Games against the agent until the person quits: the board, the agent's analysis of
    each of its moves (and the solver's, within ``solver_nodes`` nodes a column), undo,
    and a rematch with the colours swapped."""
    import os

    from ..core.bitboard import is_terminal, moves_to_bitboards

    out = sys.stdout
    colour = out.isatty() and "NO_COLOR" not in os.environ
    try:
        position, mask = moves_to_bitboards(moves)
    except ValueError as exc:
        raise PlayError(f"--moves: {exc}") from exc
    if is_terminal(position, mask):
        raise PlayError(f"--moves {moves!r}: the game is already over")
    agent = _Agent(model, sims)
    mode = f"MCTS with {sims} simulations" if sims else "greedy policy"
    stdin = interrupts.LineReader()
    start = moves
    while True:
        you, it = ("X", "O") if human_first else ("O", "X")
        print(f"Connect-Zero: you are {you} ({'first' if human_first else 'second'}), "
              f"the agent is {it}. Model: {description} [{_describe_model(model)}]; {mode}.",
              file=out)  # fmt: skip
        if solver_nodes:
            print(SOLVER_LEGEND + ".", file=out)
        moves = _one_game(agent, moves, human_first, solver_nodes, colour, stdin, out)
        if moves is None:
            return 0
        answer = stdin.read_line("Play again, colours swapped? (y/n): ", out)
        if answer is None or answer.strip().lower() not in {"y", "yes"}:
            print("Bye.", file=out, flush=True)
            return 0
        human_first, moves = not human_first, start


def _one_game(agent, moves, human_first, solver_nodes, colour, stdin, out) -> str | None:
    """One game from ``moves``; its final moves, or None when the person quit."""
    from ..core.bitboard import BOARD_MASK, alignment, moves_to_bitboards

    first = len(moves)  # moves before this point are the given opening: not undone
    while True:
        position, mask = moves_to_bitboards(moves)
        print("\n" + grid(moves, colour), file=out, flush=True)
        if moves:
            print(f"Moves: {moves}", file=out, flush=True)
        if alignment(position ^ mask) or mask == BOARD_MASK:
            if mask == BOARD_MASK and not alignment(position ^ mask):
                verdict = "Draw: the board is full."
            else:
                human_last = ((len(moves) - 1) % 2 == 0) == human_first
                verdict = "You win!" if human_last else "The agent wins."
            print(f"\nGame over. {verdict} Moves: {moves}", file=out, flush=True)
            return moves
        if (len(moves) % 2 == 0) == human_first:
            mine = [i for i in range(first, len(moves)) if (i % 2 == 0) == human_first]
            choice = _ask(mask, bool(mine), stdin, out)
            if choice is None:
                print(f"Bye. Moves so far: {moves or '(none)'}", file=out, flush=True)
                return None
            if choice == "undo":  # back to before the person's last move
                moves = moves[: mine[-1]]
                continue
            moves += str(choice + 1)
            continue
        thought = agent.analyze(position, mask)
        if solver_nodes:
            thought.solver = solver_bounds(position, mask, solver_nodes)
        print(f"Agent plays {thought.column + 1}", file=out)
        print(analysis(thought), file=out, flush=True)
        moves += str(thought.column + 1)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def _port(text: str) -> int:
    value = _non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port in [0, 65535], got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m connect_zero_pipeline play",
        description="Play the trained Connect-4 agent in the terminal, or serve the browser page.",
    )
    p.add_argument("--web", action="store_true", help="serve the exported play page on 127.0.0.1")
    p.add_argument("--port", type=_port, default=8000, help="--web: port (0: any free one)")
    p.add_argument("--dir", help="--web: page folder (default: latest catalog 'play_page' version)")
    add_model_options(p)
    p.add_argument(
        "--sims",
        type=_non_negative_int,
        default=0,
        help="MCTS simulations per move (0: raw policy)",
    )
    side = p.add_mutually_exclusive_group()
    side.add_argument(
        "--first",
        dest="human_first",
        action="store_true",
        default=True,
        help="you move first (default)",
    )
    side.add_argument(
        "--second", dest="human_first", action="store_false", help="the agent moves first"
    )
    p.add_argument(
        "--moves", default="", help="start from this position (Pons move string, e.g. 4453)"
    )
    p.add_argument(
        "--solver-nodes",
        type=_non_negative_int,
        default=SOLVER_NODES,
        metavar="N",
        help="the perfect solver's score of every column at each agent move (the terminal, "
        "and the page served by --web), within N nodes a column (default %(default)s; 0: none)",
    )
    return p  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def body() -> int:
        if args.web:
            return serve(resolve_page(args.dir), args.port, args.solver_nodes)
        model, description = resolve_model(args.model, args.dataset)
        return play_terminal(model, description, args.sims, args.human_first, args.moves,
                             args.solver_nodes)  # fmt: skip

    return run_command(body)


if __name__ == "__main__":
    sys.exit(main())
