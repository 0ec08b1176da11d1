"""``python -m connect_zero_pipeline play``: play the trained agent in the terminal or a browser.

Options: ``python -m connect_zero_pipeline play --help``. The model is ``--model PATH`` (a model file, or a versioned dataset folder:
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

``play --web`` serves the exported play page in a browser instead (:mod:`.page`).
"""

from __future__ import annotations

import os
import sys

import click

from ..core.bitboard import (
    BOARD_MASK,
    State,
    alignment,
    is_terminal,
    legal_columns,
    legal_mask,
    moves_to_bitboards,
    popcount,
    to_boards,
)
from ..core.config.search import MCTSConfig
from ..core.inference import torch_evaluate_fn
from ..core.players import masked_logits, sample_move
from ..core.search import search
from . import COUNT, PORT, finish, interrupts
from .board import SOLVER_LEGEND, Analysis, analysis, grid
from .model_source import CommandError as PlayError
from .model_source import from_here, model_options, one_model, resolve_model, run_command
from .page import resolve_page, serve
from .verdicts import SOLVER_NODES, solver_bounds


class _Agent:
    """Greedy policy (``sims == 0``) or batched MCTS (``sims > 0``) on one game."""

    def __init__(self, model, sims: int):
        self.evaluate_fn = torch_evaluate_fn(model, "cpu")
        self.config = MCTSConfig(sims=sims) if sims > 0 else None

    def analyze(self, position: int, mask: int) -> Analysis:
        """The move it plays and why: the network's policy and value, and the search's visits
        and Q per column (side to move's view)."""
        import torch  # noqa: PLC0415 (torch: 1.1 s, when a model is used)

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
        col = int(result.action[0])  # as MCTSPlayer plays
        q = [None if v != v else v for v in result.tree.root_q()[0].tolist()]  # NaN: unvisited
        return Analysis(col, policy, float(result.root_value[0]),
                        [int(n) for n in visits[0].tolist()], q)  # fmt: skip


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


@click.command()
@click.option("--web", is_flag=True, help="Serve the exported play page on 127.0.0.1 instead.")
@click.option(
    "--port",
    type=PORT,
    default=8000,
    show_default=True,
    help="--web: the port (0: any free one).",
)
@click.option(
    "--dir",
    "page_dir",
    default=None,
    metavar="PATH",
    show_default="the latest 'play_page' version",
    help="--web: the page folder.",
)
@model_options
@click.option(
    "--sims",
    type=COUNT,
    default=0,
    show_default=True,
    metavar="N",
    help="MCTS simulations per move (0: the raw policy).",
)
@click.option(
    "--first/--second",
    "human_first",
    default=True,
    show_default=True,
    help="You move first, or the agent does.",
)
@click.option(
    "--moves", default="", help="Start from this position (a Pons move string, e.g. 4453)."
)
@click.option(
    "--solver-nodes",
    type=COUNT,
    default=SOLVER_NODES,
    show_default=True,
    metavar="N",
    help="The perfect solver's verdict on every column at each agent "
    "move (the terminal, and the page served by --web), within N nodes a column "
    "(0: none).",
)
def play(web, port, page_dir, model, dataset, project, sims, human_first, moves,
         solver_nodes) -> None:  # fmt: skip
    """Play the agent in the terminal, or in the browser with --web."""
    one_model(model, dataset)
    model, page_dir = from_here(model), from_here(page_dir)

    def body() -> int:
        if web:
            return serve(resolve_page(page_dir), port, solver_nodes)
        network, description = resolve_model(model, dataset)
        return play_terminal(network, description, sims, human_first, moves, solver_nodes)

    finish(run_command(body, project))
