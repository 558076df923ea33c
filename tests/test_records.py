"""stapel_rl.records: JSON-lines records that a kill can tear only at the end."""

import pytest

from stapel_rl.records import append_jsonl, load_jsonl, start_jsonl


def test_a_torn_last_line_is_dropped_and_appends_start_a_line_of_their_own(tmp_path):
    path = tmp_path / "games.jsonl"
    assert start_jsonl(path) == [] and path.read_text() == ""  # made now: a path it cannot write fails now
    append_jsonl(path, {"game": 0})
    append_jsonl(path, {"game": 1})
    path.write_text(path.read_text() + '{"game": 2, "sco')  # killed while writing
    assert load_jsonl(path) == [{"game": 0}, {"game": 1}]
    assert start_jsonl(path) == [{"game": 0}, {"game": 1}]
    assert path.read_text() == '{"game": 0}\n{"game": 1}\n'
    append_jsonl(path, {"game": 2})
    assert load_jsonl(path) == [{"game": 0}, {"game": 1}, {"game": 2}]
    assert [p.name for p in tmp_path.iterdir()] == ["games.jsonl"]  # no temporary file left


def test_a_whole_file_is_not_rewritten(tmp_path):
    path = tmp_path / "games.jsonl"
    path.write_text('{"b":1,  "a":2}\n')  # not as json.dumps writes it
    assert start_jsonl(path) == [{"b": 1, "a": 2}]
    assert path.read_text() == '{"b":1,  "a":2}\n'


def test_a_damaged_line_before_the_end_is_an_error_naming_it(tmp_path):
    path = tmp_path / "games.jsonl"
    path.write_text('{"game": 0}\n{"ga\n{"game": 2}\n')
    with pytest.raises(ValueError, match=r"games.jsonl: line 2 is not JSON"):
        start_jsonl(path)
    assert path.read_text() == '{"game": 0}\n{"ga\n{"game": 2}\n'


def test_a_record_is_made_with_its_folder_before_any_game_and_a_folder_is_no_record(tmp_path):
    path = tmp_path / "new" / "folder" / "match.jsonl"
    assert start_jsonl(path) == [] and path.is_file()
    with pytest.raises(ValueError, match="is a folder: name a file in it, such as"):
        start_jsonl(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):  # a folder where a file is
        start_jsonl(tmp_path / "file" / "match.jsonl")
