"""Where the shipped scenario files are: ``scenarios/`` of a source checkout,
else the copies installed with the package (``reproductions/data/``)."""

from __future__ import annotations

from pathlib import Path

from fabricsim.errors import FabricsimError

__all__ = ["scenario_path"]

_CHECKOUT = Path(__file__).resolve().parents[2] / "scenarios"
_INSTALLED = Path(__file__).resolve().parent / "reproductions" / "data"


def scenario_path(name: str) -> Path:
    """The shipped scenario file ``name`` (e.g. ``"pt-sdn.yaml"``)."""
    checkout = _CHECKOUT / name
    if checkout.is_file():
        return checkout
    for installed in sorted(_INSTALLED.glob(f"*/{name}")):
        return installed
    raise FabricsimError(f"{name}: not a shipped scenario (looked in {_CHECKOUT} and {_INSTALLED})")
