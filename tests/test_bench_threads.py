"""scripts/bench_threads.py: a move's search time by torch threads beside a load (docs/benchmarks.md)."""

import re

import torch

from scripts import load_script


def test_bench_threads_times_both_counts_and_stops_its_load(capsys):
    bench = load_script("bench_threads")
    before = torch.get_num_threads()
    try:
        bench.main(["--agent", "mcts:variant_I:sims=8", "--load", "1", "--positions", "2", "--repeats", "1"])
    finally:
        torch.set_num_threads(before)
    out = capsys.readouterr().out
    assert "1 busy processes beside the search" in out
    assert re.search(rf"before: {before} torch threads +\d+\.\d{{4}} s", out)
    assert re.search(r"after: +1 torch thread +\d+\.\d{4} s +\(\d+\.\d\dx faster\)", out)


def test_the_load_is_gone_with_its_block():
    bench = load_script("bench_threads")
    with bench.busy_processes(2) as processes:
        assert [p.poll() for p in processes] == [None, None]
    assert all(p.poll() is not None for p in processes)
