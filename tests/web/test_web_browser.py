"""The web board in a real browser: Playwright driving Debian's Chromium against a live stapel-serve.

Skipped only where Chromium or Playwright is missing; CI's .ci/run installs Chromium.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api")

from scripts import load_script  # noqa: E402
from stapel_rl.cli.serve import start_in_thread  # noqa: E402
from stapel_rl.env import apply_move, from_fens, initial_fen, legal_moves  # noqa: E402
from stapel_rl.eval.agents import make_agent  # noqa: E402
from stapel_rl.web import create_app  # noqa: E402
from stapel_rl.web.agents import BASELINES  # noqa: E402
from stapel_rl.web.games import WebGame, board  # noqa: E402

pytestmark = pytest.mark.slow

# The screenshot script's browser: Debian's Chromium with the flags it needs on machines without a network.
SCREENSHOT = load_script("web_screenshot")
CHROMIUM, CHROMIUM_ARGS = SCREENSHOT.CHROMIUM, SCREENSHOT.CHROMIUM_ARGS
TWO_LEAPS = "W:b,b,,,,,,,,,,,,,,,,b,b,,,,,,,,b,b,,,,w,,,,,,,,,,,,,,w,w,,,"
MOVES = "#moves li"


@pytest.fixture(scope="module")
def url():
    base, stop = start_in_thread(create_app())
    yield base
    stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"


def open_game(page, url: str, **params) -> None:
    page.goto(f"{url}/?{urllib.parse.urlencode(params)}")
    page.wait_for_selector("body[data-ready]")
    wait_idle(page)


def wait_idle(page) -> None:
    page.wait_for_selector("body:not([data-busy])", state="attached")


def squares(page, selector: str) -> "list[int]":
    return [int(s) for s in page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.square)")]


def move_texts(page) -> "list[str]":
    return page.eval_on_selector_all(MOVES, "els => els.map(e => e.textContent)")


def test_full_game_against_random_by_clicks(page, url):
    open_game(page, url, agent="random", seed=1)
    # The same game played through the server's classes: the first legal path in square order each time.
    expected = WebGame(make_agent("random"), "I", "white", seed=1)
    while expected.view()["result"] is None:
        view = expected.view()
        expected.play(view["legal_moves"][view["legal_paths"].index(min(view["legal_paths"]))])
    while page.is_hidden("#banner"):
        played = page.locator(MOVES).count()
        page.locator(".square.movable").first.click()
        while page.locator(MOVES).count() == played:
            page.locator(".square.legal").first.click()
            wait_idle(page)
    assert move_texts(page) == expected.view()["moves"]
    assert page.text_content("#banner") == "White wins (Black cannot move) - you win (2-0)"
    assert page.text_content("#status") == "Game over: White wins (Black cannot move) - you win"
    assert squares(page, ".square.movable, .square.legal") == []


def test_two_leap_capture_leap_by_leap(page, url):
    open_game(page, url, agent="random", seed=0, fen=TWO_LEAPS)
    assert squares(page, ".square.movable") == [32]
    page.click('[data-square="32"]')
    assert squares(page, ".square.legal") == [23]  # 32x21 takes one man: not the maximum capture
    page.click('[data-square="23"]')
    assert squares(page, ".square.legal") == [12, 14]
    assert squares(page, ".square.selected") == [32] and squares(page, ".square.path") == [23]
    assert page.text_content("#status") == "White to move (you): capture under way, choose the next leap"
    page.click('[data-square="14"]')
    page.wait_for_function("document.querySelectorAll('#moves li').length === 2")
    assert move_texts(page)[0] == "32x23x14"
    assert page.text_content('[data-square="14"] .height') == "3"
    assert page.text_content('[data-square="14"] title') == "3 men, top first: wbb"


def test_illegal_clicks_change_nothing(page, url):
    open_game(page, url, agent="random", seed=0)
    before = page.inner_html("#board")
    for square in (25, 1, 22):  # empty, the opponent's, empty
        page.click(f'[data-square="{square}"]')
    assert page.inner_html("#board") == before and move_texts(page) == []
    page.click('[data-square="32"]')
    selected = page.inner_html("#board")
    assert squares(page, ".square.legal") == [27, 28]
    page.click('[data-square="22"]')
    page.click('[data-square="19"]')
    assert page.inner_html("#board") == selected and move_texts(page) == []


def test_undo_and_flip(page, url):
    open_game(page, url, agent="random", seed=0)
    page.click('[data-square="32"]')
    page.click('[data-square="28"]')
    page.wait_for_function("document.querySelectorAll('#moves li').length === 2")
    assert move_texts(page)[0] == "32-28"
    page.click("#undo")
    page.wait_for_function("document.querySelectorAll('#moves li').length === 0")
    assert page.get_attribute('[data-square="1"] rect.cell', "x") == "50"
    page.click("#flip")
    assert page.get_attribute('[data-square="1"] rect.cell', "x") == "400"  # square 1 now on White's side


def test_replay_a_pdn_file(page, url, tmp_path):
    game = WebGame(make_agent("random"), "I", "white", seed=3)
    for _ in range(3):
        view = game.view()
        game.play(view["legal_moves"][-1])
    moves = game.view()["moves"]
    second = WebGame(make_agent("random"), "I", "white", fen=TWO_LEAPS, seed=0)
    second.play("32x23x12")
    path = tmp_path / "games.pdn"
    path.write_text(game.pdn() + "\n" + second.pdn())
    open_game(page, url, agent="random", seed=0)
    page.set_input_files("#pdn-file", str(path))
    page.wait_for_selector("body.replaying")
    assert page.text_content("#replay-pos") == f"move 0 of {len(moves)}"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.text_content("#replay-pos") == f"move 2 of {len(moves)}"
    assert page.text_content("#moves li.current") == moves[1]
    fen = apply_move(apply_move(initial_fen("I"), moves[0]), moves[1])
    stacks = board(from_fens([fen], "I"))
    drawn = page.eval_on_selector_all(
        ".square", "els => els.map(e => { const t = e.querySelector('.stack title'); return t ? t.textContent : ''; })"
    )
    assert [d.rsplit(" ", 1)[-1] if d else "" for d in drawn] == stacks
    page.keyboard.press("ArrowLeft")
    assert page.text_content("#replay-pos") == f"move 1 of {len(moves)}"
    page.keyboard.press("End")
    assert page.text_content("#replay-pos") == f"move {len(moves)} of {len(moves)}"
    assert move_texts(page) == moves
    page.select_option("#replay-game", "1")
    page.wait_for_function("document.querySelector('#replay-pos').textContent === 'move 0 of 2'")
    page.keyboard.press("ArrowRight")
    assert move_texts(page) == second.view()["moves"] and squares(page, ".square.last-to") == [12]


def test_analysis_arrows(page, url):
    open_game(page, url)  # the committed Variant I agent
    page.fill("#sims", "16")
    page.check("#analyse")
    page.wait_for_selector("#arrows .arrow")
    arrows = page.eval_on_selector_all("#arrows .arrow", "els => els.map(e => e.dataset.move)")
    legal = ["31-26", "31-27", "32-27", "32-28", "33-28", "33-29", "34-29", "34-30", "35-30"]
    assert arrows and set(arrows) <= set(legal)
    labels = page.eval_on_selector_all("#arrows .arrow-label", "els => els.map(e => e.textContent)")
    assert all(label.endswith("%") for label in labels)
    assert page.text_content("#value").startswith("value for White ")
    assert "(mcts:variant_I, 16 simulations)" in page.text_content("#value")


def test_a_move_against_the_classical_engine_with_its_learned_evaluation(page, url):
    open_game(page, url, agent="random", seed=0)
    # The menu offers every baseline, the engine with eval=nnue at each of its times among them.
    options = page.eval_on_selector_all("#agent option", "els => els.map(e => e.value)")
    assert options == [*BASELINES, "mcts:variant_I", "policy:variant_I", "mcts:variant_I_zero", "policy:variant_I_zero"]
    assert {"classical:time=0.1:eval=nnue", "classical:time=0.5:eval=nnue", "classical:time=1:eval=nnue"} <= set(
        options
    )
    page.select_option("#agent", "classical:time=0.1:eval=nnue")
    page.click("#new")
    wait_idle(page)
    page.click('[data-square="32"]')
    page.click('[data-square="28"]')
    page.wait_for_function("document.querySelectorAll('#moves li').length === 2")
    wait_idle(page)
    first, reply = move_texts(page)
    assert first == "32-28" and reply in legal_moves(apply_move(initial_fen("I"), "32-28"))
    assert page.text_content("#status") == "White to move (you)"
    pdn = page.evaluate("fetch(document.querySelector('#pdn').href).then(r => r.text())")
    assert '[Black "classical:time=0.1:eval=nnue"]' in pdn
