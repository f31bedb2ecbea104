"""The garbage collector paused around the package's large imports and frozen when the command ends."""

import gc
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fabricsim import gcpause

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_turns_the_collector_off_and_back_on_after_the_outermost_block(collector_on):
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_library_pause_freezes_nothing(collector_on, monkeypatch):
    monkeypatch.setattr(gcpause, "_freezes", False)
    gc.unfreeze()
    with gcpause.paused():
        kept = [[] for _ in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0 and kept


def test_in_the_command_the_end_of_the_outermost_block_freezes_what_is_alive(collector_on, monkeypatch):
    monkeypatch.setattr(gcpause, "_freezes", False)
    gcpause.freeze_after_pauses()
    gc.unfreeze()
    with gcpause.paused():
        kept = [[] for _ in range(1000)]
        with gcpause.paused():
            pass
        assert gc.get_freeze_count() == 0
    assert gc.get_freeze_count() >= len(kept)
    gc.unfreeze()


def test_paused_leaves_off_a_collector_its_caller_turned_off_and_freezes_nothing(collector_on):
    gc.unfreeze()
    gc.disable()
    with gcpause.paused():
        pass
    assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_paused_turns_it_back_on_after_an_exception(collector_on):
    with pytest.raises(RuntimeError):
        with gcpause.paused():
            raise RuntimeError("in the block")
    assert gc.isenabled()


def test_blocks_open_in_two_threads_share_one_pause(collector_on):
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gcpause.paused():
            inside.set()
            release.wait()

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait()
    with gcpause.paused():
        pass
    assert not gc.isenabled()  # the other thread's block is still open
    release.set()
    thread.join()
    assert gc.isenabled()


def test_only_the_command_freezes_the_objects_alive_when_it_ends(tmp_path):
    code = f"""
import gc, json, sys
from fabricsim.cli.main import main
scenario = {str(ROOT / "scenarios" / "quickstart.yaml")!r}
main(["validate", scenario])  # imports and builds what validating it needs
gc.unfreeze()
main(["validate", scenario])
counts = [gc.get_freeze_count()]
sys.argv = ["fabricsim", "validate", scenario]
main()
counts.append(gc.get_freeze_count())
print(json.dumps(counts), file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = json.loads(done.stderr.strip().splitlines()[-1])
    assert before == 0 and after > 10_000


def test_a_module_imported_already_is_returned_without_a_pause_or_a_freeze(collector_on, monkeypatch):
    import json as module

    paused = []
    monkeypatch.setattr(gcpause, "paused", lambda: paused.append(1))
    gc.unfreeze()
    assert gcpause.import_module("json") is module
    assert paused == [] and gc.get_freeze_count() == 0
