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
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

LOOPBACK = "127.0.0.1"
DEFAULT_MODEL_ENTRY = "latest_model"  # the export pipeline's default input
DEFAULT_PAGE_ENTRY = "play_page"
EXIT_USAGE = 2


class PlayError(Exception):
    """A problem the user can fix; printed without a traceback."""


class NoVersionError(PlayError):
    """The catalog entry exists but nothing was saved to it yet."""


# ---------------------------------------------------------------------------
# Finding the model and the page
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _chdir(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def load_catalog_entry(name: str, start: Path | None = None):
    """Load the latest version of catalog entry ``name`` of the Kedro project around ``start``.

    Reads ``conf/`` (base + local, or ``$KEDRO_ENV``) without starting a session:
    no hooks, no MLflow run. Relative file paths resolve against the project root.

    Raises:
        PlayError: outside a Kedro project, for an unknown entry, or when the
            entry has no saved version yet.
    """
    from .. import quiet

    quiet.install()  # known third-party warnings (omegaconf resolver API) stay quiet
    from kedro.config import OmegaConfigLoader
    from kedro.io import DataCatalog, DatasetError
    from kedro.utils import find_kedro_project

    project = find_kedro_project(start or Path.cwd())
    if project is None:
        raise PlayError(
            f"{start or Path.cwd()} is not inside a Kedro project, so there is no catalog "
            f"to take '{name}' from; run from the project folder or pass a path"
        )
    loader = OmegaConfigLoader(
        conf_source=str(project / "conf"),
        base_env="base",
        default_run_env=os.environ.get("KEDRO_ENV", "local"),
    )
    with _chdir(project):
        catalog = DataCatalog.from_config(loader["catalog"])
        if name not in catalog:
            raise PlayError(f"the catalog of {project} has no entry {name!r}")
        try:
            data = catalog.load(name)
        except DatasetError as exc:
            if "Did not find any versions" in str(exc) or "No such file" in str(exc):
                raise NoVersionError(
                    f"catalog entry {name!r} of {project} has no saved version yet"
                ) from exc
            raise PlayError(f"could not load catalog entry {name!r}: {exc}") from exc
        return data.resolve() if isinstance(data, Path) else data  # paths outlive the chdir


def _latest_version_file(path: Path) -> Path:
    """``path`` itself if a file, else the newest ``<version>/<name>`` inside a versioned folder."""
    if path.is_file():
        return path
    if path.is_dir():
        versions = sorted(p / path.name for p in path.iterdir() if (p / path.name).exists())
        if versions:
            return versions[-1]
    raise PlayError(f"{path} is neither a model file nor a versioned folder holding one")


def resolve_model(model_path: str | None, dataset: str):
    """``(model, description)`` from ``--model`` or the catalog entry ``dataset``."""
    from ..core.checkpoint import load_model

    if model_path is not None:
        path = _latest_version_file(Path(model_path))
        try:
            return load_model(path), str(path)
        except ValueError as exc:
            raise PlayError(str(exc)) from exc
    try:
        model = load_catalog_entry(dataset)
    except NoVersionError as exc:
        raise PlayError(
            f"no model trained yet: {exc}. Train one (kedro run), "
            f"or pass --model PATH or --dataset NAME (e.g. gen_008.model)"
        ) from exc
    return model, f"catalog entry {dataset!r} (latest version)"


def resolve_page(page_dir: str | None) -> Path:
    """The page folder to serve: ``--dir`` or the latest ``play_page`` version."""
    if page_dir is not None:
        folder = Path(page_dir)
    else:
        try:
            folder = Path(load_catalog_entry(DEFAULT_PAGE_ENTRY))
        except NoVersionError as exc:
            raise PlayError(
                f"no play page exported yet: {exc}. "
                f"Export one with: kedro run --pipelines=export (or pass --dir PATH)"
            ) from exc
    if not (folder / "index.html").is_file():
        raise PlayError(f"{folder} is not a play page folder: it has no index.html")
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

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        pass


def make_server(directory: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A threaded HTTP server for ``directory`` on 127.0.0.1 only (``port`` 0: a free port)."""
    handler = functools.partial(_PageHandler, directory=str(directory))
    return http.server.ThreadingHTTPServer((LOOPBACK, port), handler)


def serve(directory: Path, port: int) -> int:
    try:
        server = make_server(directory, port)
    except OSError as exc:
        raise PlayError(f"cannot listen on {LOOPBACK}:{port}: {exc.strerror}") from exc
    url = f"http://{LOOPBACK}:{server.server_address[1]}/"
    print(f"Serving the play page at {url} (from {directory}); Ctrl-C to stop", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
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
        from ..core.mcts import MCTSConfig, model_evaluate_fn

        self.evaluate_fn = model_evaluate_fn(model, "cpu")
        self.config = MCTSConfig(sims=sims) if sims > 0 else None

    def choose(self, position: int, mask: int) -> tuple[int, str]:
        """``(0-based column, a one-line explanation)`` for the side to move."""
        import torch

        from ..core.bitboard import State, legal_mask, to_boards
        from ..core.mcts import search
        from ..core.players import masked_logits, sample_move

        state = State(torch.tensor([position]), torch.tensor([mask]), torch.tensor([0]))
        legal = legal_mask(state)  # (1, 7)
        if self.config is None:
            logits, value = self.evaluate_fn(to_boards(state))  # (1, 7), (1,)
            probs = torch.softmax(masked_logits(logits, legal), 1)[0]
            col = int(sample_move(logits, legal, temperature=0)[0])
            detail = "policy " + " ".join(f"{c + 1}:{p:.2f}" for c, p in enumerate(probs.tolist()))
            return col, f"{detail}  value {float(value[0]):+.2f}"
        result = search(state, self.evaluate_fn, self.config)
        visits = result.visit_counts.float()  # (1, 7)
        col = int(
            sample_move(visits.log(), legal, temperature=0)[0]
        )  # as MCTSPlayer(temperature=0)
        detail = "visits " + " ".join(f"{c + 1}:{int(n)}" for c, n in enumerate(visits[0].tolist()))
        return col, f"{detail}  value {float(result.root_value[0]):+.2f}"


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


def _draw(position: int, mask: int, ply: int) -> str:
    """The board with X for the first player and O for the second."""
    from ..core.bitboard import bitboards_to_board, board_to_ascii

    board = bitboards_to_board(position, mask)  # (6, 7), +1 side to move
    return board_to_ascii(board if ply % 2 == 0 else -board, ".XO")


def _ask_column(position: int, mask: int, out) -> int | None:
    """Read a legal 0-based column from stdin; ``None`` on EOF or 'q'. Re-prompts on bad input."""
    from ..core.bitboard import top_mask_col

    while True:
        try:
            text = input("Your move (1-7, q to quit): ").strip()
        except EOFError:
            print(file=out)
            return None
        if text.lower() in {"q", "quit", "exit"}:
            return None
        if not (len(text) == 1 and "1" <= text <= "7"):
            print(f"Please enter a column from 1 to 7 (got {text!r}).", file=out, flush=True)
            continue
        col = int(text) - 1
        if mask & top_mask_col(col):
            print(f"Column {text} is full; choose another.", file=out, flush=True)
            continue
        return col


def play_terminal(model, description: str, sims: int, human_first: bool, moves: str) -> int:
    from ..core.bitboard import (
        BOARD_MASK,
        alignment,
        bottom_mask_col,
        is_terminal,
        moves_to_bitboards,
    )

    out = sys.stdout
    try:
        position, mask = moves_to_bitboards(moves)
    except ValueError as exc:
        raise PlayError(f"--moves: {exc}") from exc
    if is_terminal(position, mask):
        raise PlayError(f"--moves {moves!r}: the game is already over")
    agent = _Agent(model, sims)
    you, it = ("X", "O") if human_first else ("O", "X")
    mode = f"MCTS with {sims} simulations" if sims else "greedy policy"
    print(f"Connect-Zero: you are {you} ({'first' if human_first else 'second'}), "
          f"the agent is {it}. Model: {description} [{_describe_model(model)}]; {mode}.", file=out)  # fmt: skip
    ply = len(moves)
    while True:
        print("\n" + _draw(position, mask, ply), file=out, flush=True)
        human_turn = (ply % 2 == 0) == human_first
        if human_turn:
            col = _ask_column(position, mask, out)
            if col is None:
                print(f"Bye. Moves so far: {moves or '(none)'}", file=out, flush=True)
                return 0
        else:
            col, detail = agent.choose(position, mask)
            print(f"Agent plays {col + 1}   ({detail})", file=out, flush=True)
        moves += str(col + 1)
        position ^= mask  # the opponent becomes the side to move ...
        mask |= mask + bottom_mask_col(col)  # ... after the stone drops into `col`
        ply += 1
        if alignment(position ^ mask) or mask == BOARD_MASK:
            print("\n" + _draw(position, mask, ply), file=out)
            if mask == BOARD_MASK and not alignment(position ^ mask):
                verdict = "Draw: the board is full."
            else:
                verdict = "You win!" if human_turn else "The agent wins."
            print(f"\nGame over. {verdict} Moves: {moves}", file=out, flush=True)
            return 0


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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m connect_zero_pipeline play",
        description="Play the trained Connect-4 agent in the terminal, or serve the browser page.",
    )
    p.add_argument("--web", action="store_true", help="serve the exported play page on 127.0.0.1")
    p.add_argument(
        "--port", type=_non_negative_int, default=8000, help="--web: port (0: any free one)"
    )
    p.add_argument("--dir", help="--web: page folder (default: latest catalog 'play_page' version)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", help="model file, or versioned folder (its latest version)")
    src.add_argument(
        "--dataset",
        default=DEFAULT_MODEL_ENTRY,
        help=f"catalog entry of the model, latest version (default: {DEFAULT_MODEL_ENTRY})",
    )
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
    return p  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.web:
            return serve(resolve_page(args.dir), args.port)
        model, description = resolve_model(args.model, args.dataset)
        return play_terminal(model, description, args.sims, args.human_first, args.moves)
    except PlayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nInterrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
