// Connect-Zero play page: a person against the exported network, fully offline.
//
// The model follows the project's protocol (docs/architecture.md §3):
//   board int8 [B, 6, 7] (row 0 at the top, +1 side to move, -1 opponent, 0 empty)
//   -> logits float32 [B, 7], value float32 [B] (side to move's view, in [-1, 1]).
// Illegal columns are masked here before any choice, never trusted to the model.
//
// Play by clicking a column or pressing its number (1-7).
// State for tests and people: #board carries data-moves (the Pons move string,
// 1-based columns), data-turn (loading | human | agent | over | error) and
// data-result (win | loss | draw, the person's view) and data-win (the winning
// four as "row,col;..." 0-based, row 0 at the top). #status carries data-notice
// (full-column) after a click on a full column. Query parameters:
//   ?moves=4453      start from a position (validated)
//   &colour=second   the person plays second (default: first)
//   &agent=mcts      the agent searches with MCTS (PUCT, as the Python agent; the default)
//   &agent=lookahead the agent searches 2 plies with its value head
//   &agent=policy    the agent plays its policy's most probable move
//   &sims=200        MCTS simulations per move (1-5000)
"use strict";

(() => {
  const ROWS = 6;
  const COLS = 7;
  const CELLS = ROWS * COLS;
  const DIRECTIONS = [[0, 1], [1, 0], [1, 1], [1, -1]];

  const $ = (selector) => document.querySelector(selector);
  const boardEl = $("#board");
  const statusEl = $("#status");
  const bannerEl = $("#banner");

  if (typeof ort === "undefined") {  // exported where onnxruntime-web was not fetched
    statusEl.textContent = "This page has no onnxruntime-web (it was exported where it was not " +
      "fetched): run make web, then make play, which serves it with the runtime.";
    boardEl.dataset.turn = "error";
    return;
  }
  // onnxruntime-web: the wasm backend, single-threaded (no cross-origin isolation
  // needed), its .mjs/.wasm files fetched from this page's own folder (no CDN).
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmPaths = new URL("./", document.baseURI).href;

  let session = null;
  const game = {
    pos: null, // {grid, ply}; grid[r][c]: 0 empty, 1 first player, 2 second player
    moves: "",
    humanFirst: true,
    over: false,
    result: "",
    lastCell: null,
    winCells: [],
    firstPly: 0, // moves of the opening (?moves): undo stops there
    solverMissing: false, // no solver behind this page (a static host)
    token: 0, // bumped by every new game or undo, so a late agent reply is dropped
    searches: 0, // agent searches still running, a late one of an abandoned game too
  };

  // -------------------------------------------------------------------------
  // Rules (unbatched, on a 6x7 grid)
  // -------------------------------------------------------------------------

  function emptyPosition() {
    return { grid: Array.from({ length: ROWS }, () => new Array(COLS).fill(0)), ply: 0 };
  }

  function legalColumns(pos) {
    return pos.grid[0].map((v) => v === 0);
  }

  function lowestEmptyRow(grid, col) {
    for (let r = ROWS - 1; r >= 0; r--) if (grid[r][col] === 0) return r;
    return -1;
  }

  // The cells [[r, c], ...] of every line of four or more through (r, c), [] if none.
  function linesThrough(grid, r, c) {
    const who = grid[r][c];
    const cells = [];
    for (const [dr, dc] of DIRECTIONS) {
      const line = [[r, c]];
      for (const sign of [1, -1]) {
        let rr = r + sign * dr;
        let cc = c + sign * dc;
        while (rr >= 0 && rr < ROWS && cc >= 0 && cc < COLS && grid[rr][cc] === who) {
          line.push([rr, cc]);
          rr += sign * dr;
          cc += sign * dc;
        }
      }
      if (line.length >= 4) cells.push(...(cells.length ? line.slice(1) : line));
    }
    return cells;
  }

  // The position after `col` (0-based, legal), with won/full flags for the mover.
  function playMove(pos, col) {
    const grid = pos.grid.map((row) => row.slice());
    const r = lowestEmptyRow(grid, col);
    grid[r][col] = pos.ply % 2 === 0 ? 1 : 2;
    const line = linesThrough(grid, r, col);
    return { grid, ply: pos.ply + 1, row: r, won: line.length > 0, line, full: pos.ply + 1 === CELLS };
  }

  // -------------------------------------------------------------------------
  // The network
  // -------------------------------------------------------------------------

  // Positions -> one int8 [n, 6, 7] tensor from each side to move's view.
  async function evaluate(positions) {
    const n = positions.length;
    const data = new Int8Array(n * CELLS);
    positions.forEach((pos, i) => {
      const me = pos.ply % 2 === 0 ? 1 : 2;
      for (let r = 0; r < ROWS; r++) {
        for (let c = 0; c < COLS; c++) {
          const v = pos.grid[r][c];
          data[i * CELLS + r * COLS + c] = v === 0 ? 0 : v === me ? 1 : -1;
        }
      }
    });
    const out = await runSerially({ board: new ort.Tensor("int8", data, [n, ROWS, COLS]) });
    return { logits: out.logits.data, value: out.value.data }; // [n * 7], [n]
  }

  // One session.run at a time: a new game can start while the agent still thinks.
  let pending = Promise.resolve();
  function runSerially(feeds) {
    const run = pending.then(() => session.run(feeds));
    pending = run.catch(() => {});
    return run;
  }

  function maskedSoftmax(logits, legal) {
    let max = -Infinity;
    for (let c = 0; c < COLS; c++) if (legal[c]) max = Math.max(max, logits[c]);
    const p = new Array(COLS).fill(0);
    let sum = 0;
    for (let c = 0; c < COLS; c++) {
      if (legal[c]) {
        p[c] = Math.exp(logits[c] - max);
        sum += p[c];
      }
    }
    return p.map((x) => x / sum);
  }

  // Greedy: the legal column with the highest score; ties go to the lowest column.
  function argmaxLegal(scores, legal) {
    let best = -1;
    for (let c = 0; c < COLS; c++) {
      if (legal[c] && (best < 0 || scores[c] > scores[best])) best = c;
    }
    return best;
  }

  // 2-ply negamax with the value head at the leaves. score(a), from the agent's
  // view: +1 if `a` wins, 0 if it fills the board, else the minimum over the
  // replies b of: -1 if b wins, 0 if b fills the board, else V(after a, b) (the
  // agent is to move there). One batched network call for all leaves (<= 49).
  async function lookahead(pos) {
    const legal = legalColumns(pos);
    const scores = new Array(COLS).fill(-Infinity);
    const leaves = [];
    const owners = [];
    for (let a = 0; a < COLS; a++) {
      if (!legal[a]) continue;
      const child = playMove(pos, a);
      if (child.won) scores[a] = 1;
      else if (child.full) scores[a] = 0;
      else {
        scores[a] = Infinity;
        const replies = legalColumns(child);
        for (let b = 0; b < COLS; b++) {
          if (!replies[b]) continue;
          const grandchild = playMove(child, b);
          if (grandchild.won) scores[a] = Math.min(scores[a], -1);
          else if (grandchild.full) scores[a] = Math.min(scores[a], 0);
          else {
            leaves.push(grandchild);
            owners.push(a);
          }
        }
      }
    }
    if (leaves.length) {
      const { value } = await evaluate(leaves);
      owners.forEach((a, i) => {
        scores[a] = Math.min(scores[a], value[i]);
      });
    }
    return scores;
  }

  // PUCT search like the Python agent's (core/search/, no noise): the network's
  // priors and values, c_puct 1.5, an unvisited child valued 0, wins and draws
  // scored exactly (a win with n stones on the board is worth
  // 1 - WIN_DECAY * (n - 7) / 35, core.search.base.win_value with MCTSConfig's default
  // win_decay). One network call per simulation. Returns the root children's
  // visit counts and the root's mean value (its mover's view).
  const C_PUCT = 1.5;
  const WIN_DECAY = 0.5;
  const winValue = (stones) => 1 - (WIN_DECAY * Math.min(Math.max(stones - 7, 0), 35)) / 35;

  function newNode(pos, terminal) {
    return { pos, terminal, expanded: false, prior: null, children: new Array(COLS).fill(null), n: 0, w: 0 };
  }

  async function expand(node) {
    const { logits, value } = await evaluate([node.pos]);
    node.prior = maskedSoftmax(logits, legalColumns(node.pos));
    node.expanded = true;
    return value[0];
  }

  async function mcts(pos, sims) {
    const root = newNode(pos, 0);
    const rootValue = await expand(root);
    root.n = 1;
    root.w = rootValue;
    for (let s = 0; s < sims; s++) {
      // Select: from the root down to a leaf; node.w sums values from node's mover view.
      const path = [root];
      let node = root;
      while (node.expanded && node.terminal === 0) {
        const legal = legalColumns(node.pos);
        const sqrtN = Math.sqrt(node.n);
        let best = -1;
        let bestScore = -Infinity;
        for (let c = 0; c < COLS; c++) {
          if (!legal[c]) continue;
          const child = node.children[c];
          const n = child ? child.n : 0;
          const q = n > 0 ? -child.w / n : 0; // the child's value, from node's mover view
          const u = q + (C_PUCT * node.prior[c] * sqrtN) / (1 + n);
          if (u > bestScore) {
            bestScore = u;
            best = c;
          }
        }
        if (!node.children[best]) {
          const next = playMove(node.pos, best);
          // terminal: 1 the mover of `next` lost (its opponent just won), 2 a draw.
          node.children[best] = newNode({ grid: next.grid, ply: next.ply }, next.won ? 1 : next.full ? 2 : 0);
        }
        node = node.children[best];
        path.push(node);
      }
      // Evaluate: exact at terminals, the network elsewhere (side to move's view).
      let value;
      if (node.terminal === 1) value = -winValue(node.pos.ply);
      else if (node.terminal === 2) value = 0;
      else value = await expand(node);
      // Back up, alternating sides.
      for (let i = path.length - 1; i >= 0; i--) {
        path[i].n += 1;
        path[i].w += value;
        value = -value;
      }
    }
    const visits = root.children.map((child) => (child ? child.n : 0));
    // Q: each visited child's mean value from the root's mover view (null: not visited).
    const q = root.children.map((child) => (child && child.n > 0 ? -child.w / child.n : null));
    return { visits, q, value: root.w / root.n };
  }

  function simsParameter() {
    const n = Number(new URLSearchParams(location.search).get("sims") || 200);
    return Number.isInteger(n) && n >= 1 && n <= 5000 ? n : 200;
  }

  async function agentChoose(pos, mode) {
    const legal = legalColumns(pos);
    const root = await evaluate([pos]);
    const probs = maskedSoftmax(root.logits, legal);
    if (mode === "mcts") {
      const sims = simsParameter();
      const { visits, q, value } = await mcts(pos, sims);
      // The most visited legal column; ties go to the lowest column (as the Python agent).
      return { col: argmaxLegal(visits, legal), probs, value, visits, q, sims };
    }
    if (mode !== "lookahead") return { col: argmaxLegal(probs, legal), probs, value: root.value[0] };
    const scores = await lookahead(pos);
    // Best lookahead score; near-ties (1e-6) are broken by the policy.
    const top = Math.max(...scores.filter((s, c) => legal[c]));
    const tied = scores.map((s, c) => legal[c] && s >= top - 1e-6);
    return { col: argmaxLegal(probs, tied), probs, value: root.value[0], scores };
  }

  // -------------------------------------------------------------------------
  // The page
  // -------------------------------------------------------------------------

  function buildBoard() {
    boardEl.replaceChildren();
    const probsEl = $("#probs");
    probsEl.replaceChildren();
    for (let c = 0; c < COLS; c++) {
      const column = document.createElement("div");
      column.className = "column";
      column.dataset.col = String(c + 1);
      column.setAttribute("role", "button");
      column.setAttribute("aria-label", `Column ${c + 1}`);
      for (let r = 0; r < ROWS; r++) {
        const cell = document.createElement("div");
        cell.className = "cell";
        cell.dataset.row = String(r);
        column.append(cell);
      }
      column.addEventListener("click", () => onColumnClick(c));
      boardEl.append(column);

      const prob = document.createElement("div");
      prob.className = "prob";
      prob.dataset.col = String(c + 1);
      prob.innerHTML = '<div class="bar" style="height:0%"></div><span class="label">&ndash;</span>';
      probsEl.append(prob);
    }
  }

  function render() {
    const { grid } = game.pos;
    boardEl.querySelectorAll(".column").forEach((column, c) => {
      column.classList.toggle("full", grid[0][c] !== 0);
      column.querySelectorAll(".cell").forEach((cell, r) => {
        cell.classList.toggle("first", grid[r][c] === 1);
        cell.classList.toggle("second", grid[r][c] === 2);
        const last = game.lastCell && game.lastCell[0] === r && game.lastCell[1] === c;
        cell.classList.toggle("last", Boolean(last));
        cell.classList.toggle("win", game.winCells.some(([wr, wc]) => wr === r && wc === c));
      });
    });
    boardEl.dataset.win = game.winCells.map(([r, c]) => `${r},${c}`).join(";");
    // The move list, numbered by move pairs: "1. 4 4  2. 5 3 ...".
    const pairs = [];
    for (let i = 0; i < game.moves.length; i += 2) pairs.push(`${i / 2 + 1}. ${game.moves.slice(i, i + 2).split("").join(" ")}`);
    $("#moves").textContent = game.moves ? `Moves: ${pairs.join("  ")}` : "Moves: none yet";
    $("#undo").disabled = lastHumanPly() < 0;
    boardEl.dataset.moves = game.moves;
    boardEl.dataset.result = game.result;
    if (game.over) {
      const text = { win: "You win!", loss: "The agent wins.", draw: "Draw: the board is full." };
      bannerEl.textContent = text[game.result];
      bannerEl.dataset.result = game.result;
      bannerEl.hidden = false;
    } else {
      bannerEl.textContent = "";
      bannerEl.dataset.result = "";
      bannerEl.hidden = true;
    }
  }

  const signed = (x) => `${x >= 0 ? "+" : ""}${x.toFixed(2)}`;

  // A value in [-1, 1] in words that do not overstate it (commands/board.py's value_words).
  function valueWords(v) {
    const size = Math.abs(v);
    const words = size < 0.1 ? "about even"
      : size < 0.3 ? (v > 0 ? "slightly ahead" : "slightly behind")
      : size < 0.6 ? (v > 0 ? "ahead" : "behind")
      : (v > 0 ? "winning, it thinks" : "losing, it thinks");
    return `${words} (${signed(v)})`;
  }

  // The analysis table: per column the policy, the search's visits and Q, the solver's verdict.
  function showTable(choice, solver) {
    const rows = [["policy", choice.probs.map((p) => p.toFixed(2))]];
    if (choice.visits) rows.push(["visits", choice.visits.map(String)]);
    if (choice.q) rows.push(["Q", choice.q.map((q) => (q === null ? "" : signed(q)))]);
    // The solver's verdicts come as the server words them, with the legend of its symbols.
    const legend = $("#solver-legend");
    legend.hidden = !solver;
    if (solver) {
      rows.push(["solver", solver.verdicts]);
      legend.textContent = solver.legend;
    }
    const table = $("#analysis-table");
    table.replaceChildren();
    const head = document.createElement("tr");
    head.innerHTML = "<th></th>" + Array.from({ length: COLS }, (_, c) =>
      `<th${c === choice.col ? ' class="chosen"' : ""}>${c + 1}</th>`).join("");
    table.append(head);
    for (const [name, cells] of rows) {
      const tr = document.createElement("tr");
      tr.dataset.row = name;
      tr.innerHTML = `<th>${name}</th>` + cells.map((text, c) =>
        `<td${c === choice.col ? ' class="chosen"' : ""}>${text}</td>`).join("");
      table.append(tr);
    }
  }

  // The perfect solver's verdicts, when the page is served by `play --web` (null elsewhere).
  async function solverScores(moves) {
    if (location.protocol === "file:" || game.solverMissing) return null;
    try {
      const res = await fetch(`analyze?moves=${moves}`);
      if (!res.ok) throw new Error(String(res.status));
      return await res.json();
    } catch (err) {
      game.solverMissing = true; // a static host: the page works without it
      return null;
    }
  }

  // `yours`: the position is the person's to move, and no move of the agent's in this game
  // has been analysed yet (a new game, an opening, an undo back to it): the panel shows the
  // agent's network on the person's position instead of "–".
  function showAnalysis(choice, solver, yours = false) {
    // Bars: the search's visit share when the agent searched, else the policy.
    const shares = choice.visits ? choice.visits : choice.probs;
    const top = Math.max(...shares);
    document.querySelectorAll(".prob").forEach((el, c) => {
      const p = choice.probs[c];
      el.classList.toggle("chosen", c === choice.col);
      el.dataset.p = p.toFixed(4);
      if (choice.visits) el.dataset.visits = String(choice.visits[c]);
      el.querySelector(".bar").style.height = `${top > 0 ? Math.round((80 * shares[c]) / top) : 0}%`;
      el.querySelector(".label").textContent = choice.visits ? String(choice.visits[c]) : p.toFixed(2);
    });
    $("#bars-caption").textContent = yours
      ? "Your move: the agent's move probabilities (policy head) for your position"
      : choice.visits
        ? "The search's visits per column at the agent's last move"
        : "The agent's move probabilities (policy head) at its last move";
    showTable(choice, solver);
    // The value is the side to move's; the words are always the agent's side of it.
    const v = yours ? -choice.value : choice.value;
    const valueEl = $("#value");
    valueEl.dataset.value = v.toFixed(4);
    valueEl.dataset.yours = String(yours);
    valueEl.textContent = `The agent's view${yours ? " at your move" : ""}: ${valueWords(v)}`;
    const info = $("#search-info");
    if (yours) {
      info.textContent = "The agent's network alone on your position (one evaluation, no search); its own move is analysed after you play.";
    } else if (choice.visits) {
      const parts = choice.visits.map((n, c) => `${c + 1}: ${n}`);
      info.textContent = `MCTS, ${choice.sims} simulations; visits ${parts.join("  ")}`;
    } else if (choice.scores) {
      const parts = choice.scores.map((s, c) =>
        Number.isFinite(s) ? `${c + 1}: ${signed(s)}` : `${c + 1}: full`);
      info.textContent = `2-ply lookahead scores: ${parts.join("  ")}`;
    } else {
      info.textContent = "";
    }
  }

  function setTurn(turn, message) {
    boardEl.dataset.turn = turn;
    statusEl.dataset.notice = "";
    if (message !== undefined) statusEl.textContent = message;
  }

  function humanToMove() {
    return (game.pos.ply % 2 === 0) === game.humanFirst;
  }

  function applyMove(col) {
    const humanMoved = humanToMove();
    const next = playMove(game.pos, col);
    game.pos = { grid: next.grid, ply: next.ply };
    game.moves += String(col + 1);
    game.lastCell = [next.row, col];
    if (next.won) {
      game.winCells = next.line;
      game.over = true;
      game.result = humanMoved ? "win" : "loss";
    } else if (next.full) {
      game.over = true;
      game.result = "draw";
    }
    render();
  }

  async function advance() {
    if (game.over) {
      setTurn("over", `Game over after ${game.moves.length} moves (${game.moves}). Press New game to play again.`);
      return;
    }
    if (humanToMove()) {
      setTurn("human", "Your move: click a column.");
      if (!game.decided) await showYourPosition();
      return;
    }
    setTurn("agent", "The agent is thinking\u2026");
    const token = game.token;
    const mode = $("#agent-mode").value;
    let choice;
    boardEl.dataset.searches = String(++game.searches);
    try {
      choice = await agentChoose(game.pos, mode);
    } catch (err) {
      setTurn("error", `The agent failed: ${err}`);
      throw err;
    } finally {
      boardEl.dataset.searches = String(--game.searches);
    }
    if (token !== game.token) return; // a new game started meanwhile
    const solver = await solverScores(game.moves);
    if (token !== game.token) return;
    showAnalysis(choice, solver);
    game.decided = true;
    applyMove(choice.col);
    advance();
  }

  // The agent's view of the person's position: its network alone (one evaluation) and the
  // solver's verdicts. Counted in data-searches while it runs, as the agent's searches are.
  async function showYourPosition() {
    const token = game.token;
    const moves = game.moves;
    boardEl.dataset.searches = String(++game.searches);
    try {
      const choice = await agentChoose(game.pos, "policy");
      const solver = await solverScores(moves);
      // Shown only if the person has not played meanwhile (nor started another game).
      if (token === game.token && moves === game.moves) showAnalysis(choice, solver, true);
    } finally {
      boardEl.dataset.searches = String(--game.searches);
    }
  }

  function onColumnClick(col) {
    // Ignored unless it is the person's turn; a full column says so and waits.
    if (boardEl.dataset.turn !== "human") return;
    if (game.pos.grid[0][col] !== 0) {
      statusEl.textContent = `Column ${col + 1} is full: choose another column.`;
      statusEl.dataset.notice = "full-column";
      return;
    }
    applyMove(col);
    advance();
  }

  // Replays a Pons move string; returns an error message or "".
  function replay(moves) {
    for (let i = 0; i < moves.length; i++) {
      const ch = moves[i];
      if (ch < "1" || ch > "7") return `invalid move '${ch}' (move ${i + 1}): columns are 1-7`;
      if (game.over) return `move ${i + 1} ('${ch}') comes after the game is over`;
      const col = Number(ch) - 1;
      if (game.pos.grid[0][col] !== 0) return `move ${i + 1} ('${ch}') plays into a full column`;
      applyMove(col);
    }
    return "";
  }

  // The index of the person's last move after the opening, or -1.
  function lastHumanPly() {
    for (let k = game.moves.length - 1; k >= game.firstPly; k--) {
      if ((k % 2 === 0) === game.humanFirst) return k;
    }
    return -1;
  }

  // Takes back the person's last move (and the agent's reply, or its search under way).
  function undo() {
    const k = lastHumanPly();
    if (k < 0) return;
    const moves = game.moves.slice(0, k);
    game.token++;
    clearBoard();
    replay(moves);
    render();
    advance();
  }

  function clearBoard() {
    game.decided = false; // no move of the agent's analysed in this game yet
    game.pos = emptyPosition();
    game.moves = "";
    game.over = false;
    game.result = "";
    game.lastCell = null;
    game.winCells = [];
  }

  function newGame(moves = "") {
    game.token++;
    game.humanFirst = $("input[name=colour]:checked").value === "first";
    clearBoard();
    const error = replay(moves);
    if (error) clearBoard();  // a bad move list: the empty board
    game.firstPly = game.moves.length;
    render();
    advance();
    if (error) statusEl.textContent = `Ignored ?moves=${moves}: ${error}. ${statusEl.textContent}`;
  }

  async function showModelInfo() {
    try {
      const info = await (await fetch("model.json")).json();
      const cfg = info.config || {};
      const arch = cfg.arch === "resnet" ? `ResNet ${cfg.blocks}x${cfg.channels}` : cfg.arch === "mlp" ? `MLP ${cfg.hidden.join("-")}` : "model";
      const gen = info.meta && info.meta.generation !== undefined ? `, generation ${info.meta.generation}` : "";
      $("#model-info").textContent = `${arch}${gen}; ONNX opset ${info.opset}, onnxruntime-web ${info.onnxruntime_web || "from the server"}`;
    } catch (err) {
      $("#model-info").textContent = "model.onnx";
    }
  }

  async function main() {
    buildBoard();
    const params = new URLSearchParams(location.search);
    if (params.get("colour") === "second") $("input[name=colour][value=second]").checked = true;
    const agent = params.get("agent");
    if (["mcts", "lookahead", "policy"].includes(agent)) $("#agent-mode").value = agent;
    $("#agent-mode").querySelector("option[value=mcts]").textContent = `MCTS (${simsParameter()} simulations)`;
    $("#new-game").addEventListener("click", () => newGame());
    $("#undo").addEventListener("click", () => undo());
    // Choosing a colour starts a new game with it.
    document.querySelectorAll("input[name=colour]").forEach((el) => el.addEventListener("change", () => newGame()));
    // Keys 1-7 play a column, like clicks (and are ignored in the same cases).
    document.addEventListener("keydown", (event) => {
      if (event.key >= "1" && event.key <= "7" && !event.ctrlKey && !event.metaKey && !event.altKey) {
        if (event.target instanceof HTMLSelectElement) return;
        onColumnClick(Number(event.key) - 1);
      }
    });
    showModelInfo();
    try {
      session = await ort.InferenceSession.create("model.onnx", {
        executionProviders: ["wasm"],
        graphOptimizationLevel: "all",
      });
    } catch (err) {
      setTurn("error", `Could not load model.onnx: ${err}`);
      throw err;
    }
    boardEl.dataset.ready = "true";
    newGame(params.get("moves") || "");
  }

  main();
})();
