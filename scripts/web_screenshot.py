"""Screenshot of the web board (stapel-serve) with a game in progress and the analysis on.

Starts the server in this process, plays a seeded game against the committed
Variant I agent by clicking squares as a person would (a random legal move
each turn, captures first) until stacks have formed, turns the analysis on and
writes ``docs/web.png``. Needs Chromium (``apt-get install chromium``) and the
Python ``playwright`` package. Usage::

    python scripts/web_screenshot.py [--seed 0] [--plies 24] [--out docs/web.png]
"""

from __future__ import annotations

import argparse
import pathlib
import random
import shutil
import urllib.parse

from playwright.sync_api import Page, sync_playwright

from stapel_rl.cli.serve import start_in_thread
from stapel_rl.web import create_app

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# No network on the test machines: without these Chromium stalls on lookups and updates.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def play_by_clicks(page: Page, rng: random.Random, plies: int, min_height: int) -> None:
    """Click random legal moves (captures first) until ``plies`` are played and a stack of ``min_height`` stands."""
    for _ in range(200):
        game = page.evaluate("() => S.game")
        tallest = max(len(stack) for stack in game["board"])
        if game["result"] is not None or (len(game["moves"]) >= plies and tallest >= min_height):
            return
        paths = game["legal_paths"]
        captures = [p for p, text in zip(paths, game["legal_moves"], strict=True) if "x" in text]
        played = len(game["moves"])
        for square in rng.choice(captures or paths):
            page.click(f'[data-square="{square}"]')
        page.wait_for_function(
            f"document.querySelectorAll('#moves li').length > {played} && !document.body.dataset.busy"
        )
    raise RuntimeError("the game did not reach the position wanted")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plies", type=int, default=24, help="plies to play at least before the picture")
    parser.add_argument("--agent", default="mcts:variant_I:sims=16")
    parser.add_argument("--simulations", type=int, default=64, help="simulations of the analysis shown")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "web.png")
    args = parser.parse_args()
    url, stop = start_in_thread(create_app())
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1180, "height": 760})
            page.goto(f"{url}/?{urllib.parse.urlencode({'agent': args.agent, 'seed': args.seed})}")
            page.wait_for_selector("body[data-ready]")
            play_by_clicks(page, random.Random(args.seed), args.plies, min_height=3)
            page.fill("#sims", str(args.simulations))
            page.check("#analyse")
            page.wait_for_selector("#arrows .arrow")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            browser.close()
    finally:
        stop()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
