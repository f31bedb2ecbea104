"""Test procedures that run a scenario many times and tabulate the answer.

- :mod:`~fabricsim.experiments.burst_absorption`: the largest lossless
  many-to-one burst per frame size (RFC 2544 back-to-back / RFC 2889 style).
- :mod:`~fabricsim.experiments.features`: forwarding with packet-processing
  features (throughput and latency per frame size) and per-source fairness
  under fan-in (test plan R1.4, R1.5).
- :mod:`~fabricsim.experiments.ai_fabric`: collective iteration times of an
  AI-training fabric per load-balancing mode, with and without a failed link.
"""
