"""Test procedures that run a scenario many times and tabulate the answer.

- :mod:`~fabricsim.experiments.burst_absorption`: the largest lossless
  many-to-one burst per frame size (RFC 2544 back-to-back / RFC 2889 style).
"""
