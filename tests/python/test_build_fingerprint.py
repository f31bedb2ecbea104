"""The build fingerprint that resumed sweeps and reproductions check."""

from pathlib import Path

from fabricsim import build


def _fingerprint_of(package: Path, monkeypatch) -> str:
    monkeypatch.setattr(build, "_PACKAGE", package)
    build.fingerprint.cache_clear()
    try:
        return build.fingerprint()
    finally:
        build.fingerprint.cache_clear()


def test_a_model_edit_changes_the_fingerprint_and_a_page_edit_does_not(tmp_path, monkeypatch):
    for relative in ("schema/traffic.py", "reproductions/page.py", "outputs/report/run.py", "runner.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x = 1\n")
    base = _fingerprint_of(tmp_path, monkeypatch)
    assert len(base) == 16 and base == _fingerprint_of(tmp_path, monkeypatch)
    (tmp_path / "reproductions/page.py").write_text("x = 2\n")
    (tmp_path / "outputs/report/run.py").write_text("x = 2\n")
    assert _fingerprint_of(tmp_path, monkeypatch) == base
    (tmp_path / "schema/traffic.py").write_text("x = 2\n")
    assert _fingerprint_of(tmp_path, monkeypatch) != base


def test_the_fingerprint_covers_the_compiled_core(tmp_path, monkeypatch):
    (tmp_path / "runner.py").write_text("x = 1\n")
    core = tmp_path / "core.so"
    core.write_bytes(b"one build")
    monkeypatch.setattr(build, "_core_library", lambda: core)
    first = _fingerprint_of(tmp_path, monkeypatch)
    core.write_bytes(b"another build")
    assert _fingerprint_of(tmp_path, monkeypatch) != first
