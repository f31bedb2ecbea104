"""Flow-size distributions (CDF files) and sampling from them.

A CDF file is plain text, one ``size_bytes cumulative_probability`` point per
line, sorted by size and by probability, the last probability 1. A point
``(x, p)`` means P(size <= x) = p. A first point with p > 0, or two points
with the same size, are point masses.

Two ways to read a table (``method``):

- ``linear`` (default; HPCC, HKUST TrafficGenerator): inverse-CDF sampling
  with piecewise-linear interpolation between points; the probability between
  two points is spread uniformly over the sizes between them.
- ``step`` (Homa's simulator): discrete; a draw ``u`` gives the smallest listed
  size whose cumulative probability is >= ``u``.

Built-in tables live in ``fabricsim/workloads/data`` (see its README for their
sources); :func:`load_cdf` takes a built-in name (``datamining_vl2_pfabric``,
with or without ``.cdf``) or the path of a user's own file.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Union

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BUCKET_EDGES",
    "METHODS",
    "Cdf",
    "CdfError",
    "bucket_labels",
    "builtin_names",
    "load_cdf",
    "parse_cdf",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
MAX_SIZE = 2**53
"""Largest flow size a CDF may list, in bytes (exact as a float)."""
METHODS = ("linear", "step")
BUCKET_EDGES: tuple[int, ...] = (100_000, 1_000_000, 10_000_000)
"""Default size-bucket edges in bytes: (0,100KB], (100KB,1MB], (1MB,10MB], (10MB,inf)."""


def _size_text(n: float) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n >= scale:
            value = n / scale
            return f"{value:g}{unit}"
    return f"{n:g}B"


def bucket_labels(edges: Sequence[int] = BUCKET_EDGES) -> list[str]:
    """Labels of the buckets made by ``edges``: ``<=100KB``, ``100KB-1MB``, ..., ``>10MB``."""
    edges = list(edges)
    if not edges:
        return ["all"]
    labels = [f"<={_size_text(edges[0])}"]
    labels += [f"{_size_text(a)}-{_size_text(b)}" for a, b in zip(edges, edges[1:])]
    labels.append(f">{_size_text(edges[-1])}")
    return labels


class CdfError(ValueError):
    """A CDF file or table that cannot be used."""


def parse_cdf(text: str, source: str = "<text>") -> tuple[np.ndarray, np.ndarray]:
    """Sizes and probabilities of a CDF table, checked."""
    import numpy as np

    sizes: list[float] = []
    probs: list[float] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").split()
        if len(parts) < 2:
            raise CdfError(f"{source}:{number}: expected 'size cumulative_probability', got {line!r}")
        try:
            size, prob = float(parts[0]), float(parts[-1])
        except ValueError:
            raise CdfError(f"{source}:{number}: not numbers: {line!r}") from None
        if not (math.isfinite(size) and 0 <= size <= MAX_SIZE):
            raise CdfError(f"{source}:{number}: size must be from 0 to 2**53 bytes (got {parts[0]})")
        if not 0 <= prob <= 1:
            raise CdfError(f"{source}:{number}: probability must be in [0, 1] (got {parts[-1]})")
        if sizes and (size < sizes[-1] or prob < probs[-1]):
            raise CdfError(f"{source}:{number}: sizes and probabilities must be non-decreasing")
        sizes.append(size)
        probs.append(prob)
    if not sizes:
        raise CdfError(f"{source}: no points")
    if abs(probs[-1] - 1.0) > 1e-9:
        raise CdfError(f"{source}: the last probability must be 1 (got {probs[-1]})")
    probs[-1] = 1.0
    if sizes[-1] < 1:
        raise CdfError(f"{source}: every size is 0: flows need at least one byte")
    return np.asarray(sizes, dtype=np.float64), np.asarray(probs, dtype=np.float64)


def builtin_names() -> list[str]:
    """Names of the built-in CDF tables, sorted."""
    return sorted(p.stem for p in DATA_DIR.glob("*.cdf"))


def _resolve(name_or_path: Union[str, "os.PathLike[str]"]) -> Path:
    text = os.fspath(name_or_path)
    stem = text[:-4] if text.endswith(".cdf") else text
    if os.sep not in text and "/" not in text and (DATA_DIR / f"{stem}.cdf").is_file():
        return DATA_DIR / f"{stem}.cdf"
    path = Path(text).expanduser()
    if path.is_file():
        return path
    raise CdfError(
        f"{text!r} is neither a built-in workload nor a readable file; built-in: {', '.join(builtin_names())}"
    )


@dataclass(frozen=True)
class Cdf:
    """A flow-size distribution: ``sizes`` (bytes) and cumulative ``probs``."""

    name: str
    sizes: np.ndarray
    probs: np.ndarray
    source: str = ""

    # ---- masses -----------------------------------------------------------

    def _pieces(self, method: str) -> list[tuple[float, float, float]]:
        """The distribution as (low, high, probability) pieces; low == high is a point mass."""
        _check_method(method)
        x, p = self.sizes, self.probs
        pieces = []
        if p[0] > 0:
            pieces.append((x[0], x[0], float(p[0])))
        for i in range(1, len(x)):
            mass = float(p[i] - p[i - 1])
            if mass <= 0:
                continue
            if method == "step" or x[i] == x[i - 1]:
                pieces.append((x[i], x[i], mass))
            else:
                pieces.append((x[i - 1], x[i], mass))
        return pieces

    def mean(self, method: str = "linear") -> float:
        """Mean flow size in bytes under ``method``."""
        return float(sum(m * (a + b) / 2 for a, b, m in self._pieces(method)))

    def mean_segments(self, mss: int, method: str = "linear") -> float:
        """Mean number of ``mss``-byte segments per flow, ``E[ceil(size / mss)]``
        (a flow has at least one), exactly under ``method``."""
        m = float(mss)

        def integral(x: float) -> float:
            # F(x) = integral of ceil(t / m) over (0, x]
            k = math.floor(x / m)
            return m * k * (k + 1) / 2 + (x - k * m) * (k + 1)

        total = 0.0
        for a, b, mass in self._pieces(method):
            if a == b:
                total += mass * max(math.ceil(max(a, 1.0) / m), 1)
            else:
                total += mass * (integral(b) - integral(a)) / (b - a)
        return total

    def bucket_shares(
        self, edges: Sequence[int] = BUCKET_EDGES, method: str = "linear"
    ) -> tuple[list[float], list[float]]:
        """(share of flows, share of bytes) per bucket ``(0,e0], (e0,e1], ..., (e_last, inf)``."""
        bounds = [0.0, *map(float, edges), math.inf]
        flows = [0.0] * (len(bounds) - 1)
        volume = [0.0] * (len(bounds) - 1)
        for a, b, m in self._pieces(method):
            for k in range(len(flows)):
                lo, hi = bounds[k], bounds[k + 1]
                if a == b:
                    if lo < a <= hi or (k == 0 and a == 0):
                        flows[k] += m
                        volume[k] += m * a
                    continue
                left, right = max(a, lo), min(b, hi)
                if right <= left:
                    continue
                share = m * (right - left) / (b - a)
                flows[k] += share
                volume[k] += share * (left + right) / 2
        total = sum(volume) or 1.0
        return flows, [v / total for v in volume]

    # ---- sampling ---------------------------------------------------------

    def sample(self, rng: np.random.Generator, n: int, method: str = "linear") -> np.ndarray:
        """``n`` flow sizes in bytes (integers >= 1) drawn with ``rng``."""
        _check_method(method)
        u = rng.random(n)
        return self.sizes_at(u, method)

    def sizes_at(self, u: np.ndarray, method: str = "linear") -> np.ndarray:
        """Inverse CDF at probabilities ``u`` (array in [0, 1)), as integer sizes >= 1."""
        import numpy as np

        _check_method(method)
        x, p = self.sizes, self.probs
        if method == "step":
            index = np.searchsorted(p, u, side="left")
            values = x[np.minimum(index, len(x) - 1)]
        else:
            # Segment i covers (p[i-1], p[i]]; below p[0] is the point mass at x[0].
            index = np.searchsorted(p, u, side="left")
            index = np.clip(index, 0, len(x) - 1)
            prev = np.maximum(index - 1, 0)
            p0, p1 = p[prev], p[index]
            x0, x1 = x[prev], x[index]
            width = p1 - p0
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(width > 0, (u - p0) / np.where(width > 0, width, 1.0), 1.0)
            values = np.where(index == 0, x[0], x0 + np.clip(frac, 0.0, 1.0) * (x1 - x0))
        return np.maximum(np.rint(values), 1).astype(np.int64)

    def describe(self, edges: Sequence[int] = BUCKET_EDGES) -> dict[str, Any]:
        """Points, means and bucket shares (linear method) of this table."""
        flows, volume = self.bucket_shares(edges)
        return {
            "name": self.name,
            "points": int(len(self.sizes)),
            "max_bytes": float(self.sizes[-1]),
            "mean_linear": self.mean("linear"),
            "mean_step": self.mean("step"),
            "flow_shares": flows,
            "byte_shares": volume,
        }


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise CdfError(f"unknown sampling method {method!r}; allowed: {', '.join(METHODS)}")


_CACHE: dict[str, Cdf] = {}


def load_cdf(name_or_path: Union[str, "os.PathLike[str]"]) -> Cdf:
    """A built-in table by name, or a CDF file by path (cached by resolved path and mtime)."""
    path = _resolve(name_or_path)
    key = f"{path.resolve()}:{path.stat().st_mtime_ns}"
    if key not in _CACHE:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CdfError(f"{path}: not a UTF-8 text file (byte {exc.start})") from None
        except OSError as exc:
            raise CdfError(f"{path}: cannot read: {exc.strerror or exc}") from None
        sizes, probs = parse_cdf(text, str(path))
        name = path.stem if path.parent == DATA_DIR else str(path)
        _CACHE[key] = Cdf(name=name, sizes=sizes, probs=probs, source=str(path))
    return _CACHE[key]
