"""scripts/fit_classical.py --start: the documented runs start from the weights the packaged fit started from."""

import json

import numpy as np
import pytest

from scripts import load_script
from stapel_rl.classical import FEATURES
from stapel_rl.classical.evaluation import read_weights, weights_path


@pytest.mark.parametrize("variant", ["I", "II"])
def test_start_initial_is_the_packaged_fits_start(variant):
    script = load_script("fit_classical")
    packaged, metadata = read_weights(weights_path(variant))
    weights, start_meta, source = script.starting_weights("initial", variant)
    assert weights.tolist() == [metadata["initial_weights"][f] for f in FEATURES]
    assert not np.array_equal(weights, packaged)  # the packaged file holds the fitted weights
    assert start_meta == {"variant": variant, "status": "initial"}
    assert source == f"{weights_path(variant)} (metadata.initial_weights)"
    # Without --start: the packaged weights themselves.
    assert script.starting_weights(None, variant)[0].tolist() == packaged.tolist()


def test_start_from_a_file(tmp_path):
    script = load_script("fit_classical")
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"metadata": {"variant": "I"}, "weights": {f: i for i, f in enumerate(FEATURES)}}))
    weights, start_meta, source = script.starting_weights(str(path), "I")
    assert weights.tolist() == list(range(len(FEATURES))) and start_meta == {"variant": "I"} and source == str(path)
    with pytest.raises(ValueError, match="does not exist"):
        script.starting_weights(str(tmp_path / "none.json"), "I")
