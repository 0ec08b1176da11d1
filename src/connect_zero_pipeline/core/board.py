"""The board's sizes: plain numbers, for the configs (:mod:`.config`) and the engine."""

WIDTH = 7
HEIGHT = 6
NUM_CELLS = WIDTH * HEIGHT
MIN_GAME_PLIES = 7  # the shortest Connect-4 game (a vertical four by the first player)
