"""Board definitions (one folder each, with board.json)."""
import json
import os

BOARDS_DIR = os.path.dirname(os.path.abspath(__file__))


def load_board(name):
    path = os.path.join(BOARDS_DIR, name, "board.json")
    if not os.path.isfile(path):
        from aot.errors import AotError
        known = sorted(d for d in os.listdir(BOARDS_DIR) if os.path.isfile(os.path.join(BOARDS_DIR, d, "board.json")))
        raise AotError(f"unknown board '{name}' (known: {', '.join(known)})")
    with open(path) as f:
        return json.load(f)
