"""Traffic workloads: flow-size distributions and the flow generator of ``kind: workload`` entries.

- :mod:`fabricsim.workloads.cdf`: CDF files (the built-in ones in ``data/``),
  sampling from them, flow-size buckets;
- :mod:`fabricsim.workloads.flowgen`: expansion of a workload entry into an
  explicit TCP flow list (Poisson arrivals at an offered load).
"""

from fabricsim.workloads.cdf import (
    BUCKET_EDGES,
    METHODS,
    Cdf,
    CdfError,
    bucket_labels,
    builtin_names,
    load_cdf,
    parse_cdf,
)

__all__ = ["BUCKET_EDGES", "METHODS", "Cdf", "CdfError", "bucket_labels", "builtin_names", "load_cdf", "parse_cdf"]
