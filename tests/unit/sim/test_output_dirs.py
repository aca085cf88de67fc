"""Commands replace only their own output: replay --out never deletes a run or an unrelated folder."""

from __future__ import annotations

import pytest

from mnemarket.errors import ConfigError
from mnemarket.run.output_dirs import MARKER, prepare_output_dir


def test_a_new_or_empty_directory_is_made_and_marked(tmp_path):
    out = prepare_output_dir(tmp_path / "new", "replay")
    assert (out / MARKER).read_text().strip() == "replay"
    (tmp_path / "empty").mkdir()
    assert (prepare_output_dir(tmp_path / "empty", "replay") / MARKER).exists()


def test_the_command_replaces_its_own_output_only(tmp_path):
    out = prepare_output_dir(tmp_path / "r", "replay")
    (out / "world.db").write_text("old")
    prepare_output_dir(out, "replay")
    assert not (out / "world.db").exists()
    (out / "keep.txt").write_text("x")
    with pytest.raises(ConfigError, match="not made by `mnemarket demo`"):
        prepare_output_dir(out, "demo")
    assert (out / "keep.txt").exists()


def test_an_unrelated_folder_or_the_run_itself_is_refused(tmp_path):
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("precious")
    with pytest.raises(ConfigError, match="is not empty and was not made by `mnemarket replay`"):
        prepare_output_dir(mine, "replay")
    assert (mine / "chapter1.tex").read_text() == "precious"
    run = tmp_path / "runs" / "demo"
    run.mkdir(parents=True)
    for out in (run, tmp_path / "runs"):
        with pytest.raises(ConfigError, match="holds"):
            prepare_output_dir(out, "replay", protect=run)
    assert run.exists()
