"""Issue 38, class 4: configuration files and the files they name.

`validate` and `run` read through one guarded reader (regular UTF-8 files under a size cap,
bounded nesting), so a bad file is one line in both and never hides the good files beside it;
a FIFO or a device never hangs or fills memory; prompt and `extends:` files come only from the
naming file's tree, its repository checkout or a folder allowed with `--allow-dir`. On 760d240
validate raised tracebacks, a FIFO hung, /dev/zero raised MemoryError and any .md on disk went
into the prompt. The reads that hung or filled memory run in a child process with a time and
memory limit, so the old code fails the test instead of stopping the suite.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mnemarket.agents import load_agent_config
from mnemarket.cli.app import app
from mnemarket.errors import ConfigError
from mnemarket.experiments.validate import validate_path

ROOT = Path(__file__).resolve().parents[3]
FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _in_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child capped at 1.5 GB that is killed after ``timeout`` seconds."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))

    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=cap,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s: {code}")


def _load_in_child(agent: Path, allow: Path | None = None) -> str:
    """The ConfigError message loading ``agent`` gives in a child ("ok" when it loads)."""
    done = _in_child(f"""
from contextlib import nullcontext
from mnemarket.agents import load_agent_config
from mnemarket.errors import ConfigError
try:
    from mnemarket.yaml_config import allow_dirs
except ImportError:  # the code before the fix
    allow_dirs = lambda dirs: nullcontext()
try:
    with allow_dirs({[str(allow)] if allow else []!r}):
        load_agent_config({str(agent)!r})
    print("ok")
except ConfigError as exc:
    print(exc)
""")
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout.strip()


@pytest.mark.parametrize("field", ["extends: p.yaml", "system_prompt: p.md"])
def test_a_fifo_is_refused_at_once(tmp_path, field):
    os.mkfifo(tmp_path / field.split(": ")[1])
    agent = tmp_path / "a.yaml"
    agent.write_text(f"{field}\nid: alpha\n")
    assert "is not a regular file" in _load_in_child(agent)
    (tmp_path / "fifo.yaml").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "fifo.yaml")  # and validate of the folder holding one
    done = _in_child(f"from mnemarket.experiments.validate import validate_path\nfrom pathlib import Path\n"
                     f"print(validate_path(Path({str(tmp_path)!r}))[0])")
    assert done.returncode == 0 and "fifo.yaml: is not a regular file" in done.stdout, done.stderr[-800:]


def test_a_device_is_refused_without_reading_it(tmp_path):
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    agent = tmp_path / "a.yaml"
    agent.write_text("id: alpha\nsystem_prompt: zero.md\n")
    assert "outside the folder" in _load_in_child(agent)  # the link leads out of the tree
    assert "/dev/zero: is not a regular file" in _load_in_child(agent, allow=Path("/dev"))


def test_a_prompt_file_must_be_utf8_text(tmp_path):
    (tmp_path / "p.md").write_bytes(b"You trade \xff\xfe.")
    agent = tmp_path / "a.yaml"
    agent.write_text("id: alpha\nsystem_prompt: p.md\n")
    with pytest.raises(ConfigError, match="p.md: is not UTF-8"):
        load_agent_config(agent)


@pytest.mark.parametrize("name", ["../secret.md", "{outside}/secret.md", "notes/../../secret.txt", "link.md"])
def test_a_prompt_from_outside_the_tree_is_refused_unless_allowed(tmp_path, name):
    from mnemarket.yaml_config import allow_dirs

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("SECRET KEY 1234")
    (tmp_path / "secret.md").write_text("SECRET KEY 1234")
    (tmp_path / "secret.txt").write_text("SECRET KEY 1234")
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "link.md").symlink_to(outside / "secret.md")
    agent = folder / "a.yaml"
    agent.write_text(f"id: alpha\nsystem_prompt: {name.format(outside=outside)}\n")
    with pytest.raises(ConfigError, match="outside the folder of this file.*--allow-dir") as caught:
        load_agent_config(agent)
    assert "SECRET" not in str(caught.value)
    code = CliRunner().invoke(app, ["validate", str(agent)]).exit_code
    assert code == 1
    with allow_dirs([tmp_path]):
        assert load_agent_config(agent).system_prompt == "SECRET KEY 1234"
    assert CliRunner().invoke(app, ["validate", str(agent), "--allow-dir", str(tmp_path)]).exit_code == 0


def test_files_of_the_same_checkout_may_be_named(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "prompts").mkdir()
    (repo / "prompts" / "p.md").write_text("You are careful.")
    (repo / "agents" / "team").mkdir(parents=True)
    (repo / "agents" / "base.yaml").write_text("system_prompt: ../prompts/p.md\n")
    agent = repo / "agents" / "team" / "a.yaml"
    agent.write_text("extends: ../base.yaml\nid: alpha\n")
    assert load_agent_config(agent).system_prompt == "You are careful."
    (repo / ".git").rmdir()  # the same files outside a checkout: the base lies outside a.yaml's folder
    with pytest.raises(ConfigError, match="extends: names '../base.yaml', outside"):
        load_agent_config(agent)


BAD_FILES = {
    "nonutf.yaml": b"id: \xff\xfe alpha\n",
    "binary.yaml": b"\x00\x01\x02id: alpha",
    "flow_deep.yaml": b"id: " + b"[" * 200_000 + b"]" * 200_000 + b"\n",
    "block_deep.yaml": b"".join(b" " * i + b"k%d:\n" % i for i in range(1_200)),
    "nested_60.yaml": b"id: alpha\nrag: " + b"{a: " * 60 + b"1" + b"}" * 60 + b"\n",
    "keys_6mb.yaml": b"".join(b"k%d: %d\n" % (i, i) for i in range(400_000)),
    "list.yaml": b"- 1\n- 2\n",
}


def test_validate_and_run_give_the_same_one_line_error_and_good_files_still_validate(tmp_path):
    (tmp_path / "good.yaml").write_text("id: alpha\n")
    for name, data in BAD_FILES.items():
        (tmp_path / name).write_bytes(data)
    done = _in_child(f"from mnemarket.experiments.validate import validate_path\nfrom pathlib import Path\n"
                     f"import json\nprint(json.dumps(validate_path(Path({str(tmp_path)!r}))))", timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    problems, checked = json.loads(done.stdout)
    assert checked == len(BAD_FILES) + 1 and len(problems) == len(BAD_FILES)  # good.yaml is valid
    for name in BAD_FILES:
        with pytest.raises(ConfigError) as caught:  # what a run says of the same file
            load_agent_config(tmp_path / name)
        assert str(caught.value) in problems and "\n" not in str(caught.value)
    joined = " ".join(problems)
    for needle in ("not UTF-8", "binary", "nests", "bytes; configuration files are limited"):
        assert needle in joined


@FAST
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_never_break_validation_of_the_file_beside_them(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz_validate")
    (folder / "good.yaml").write_text("id: alpha\n")
    (folder / "fuzz.yaml").write_bytes(data)
    problems, checked = validate_path(folder)
    assert checked == 2 and len(problems) <= 1
    assert all(p.startswith(str(folder / "fuzz.yaml")) for p in problems)
    assert all("could not be checked" not in p for p in problems)  # every failure was foreseen
