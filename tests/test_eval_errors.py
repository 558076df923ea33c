"""scripts/eval_errors.py: evaluations' log-loss and residuals by kind of position."""

import numpy as np

from scripts import load_script
from stapel_rl.classical import Searcher
from stapel_rl.classical.selfplay import collect
from stapel_rl.env import get_variant
from stapel_rl.records import save_npz


def test_the_tables_of_two_evaluations(tmp_path, capsys):
    script = load_script("eval_errors")
    variant = get_variant("II")
    data = collect(variant, Searcher(variant), 6, 3, 80, 4, 0.1, 0.3, progress=False)
    save_npz(tmp_path / "positions.npz", data)
    assert script.main([str(tmp_path / "positions.npz"), "--variant", "II", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert f"Variant II: {len(data['result'])} positions" in out
    assert "| all positions | " in out and "| hand: loss / residual | nnue: loss / residual |" in out
    hand = script.chances("hand", "II", {k: data[k] for k in ("inputs", "extra", "side", "features", "result")})
    assert hand.shape == data["result"].shape and ((hand > 0) & (hand < 1)).all()
    # The packaged network reads as the search reads it: its correction added to the hand-written logit.
    assert np.isfinite(script.chances("nnue", "II", data)).all()
    assert script.main([str(tmp_path / "positions.npz"), "--variant", "I", "--eval", "missing.npz"]) == 2
    assert script.main([str(tmp_path / "nothing.npz")]) == 2
