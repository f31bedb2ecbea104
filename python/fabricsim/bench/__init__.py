"""Speed of the core on fixed scenarios (``fabricsim bench``).

- :mod:`~fabricsim.bench.scenarios`: the fixed scenarios (and their ns-3 twins);
- :mod:`~fabricsim.bench.workload`: the leaf-spine data-mining workload scenario stretched to a flow count;
- :mod:`~fabricsim.bench.run`: timing each scenario in a process of its own, the table;
- :mod:`~fabricsim.bench.htsim`: fabricsim and htsim on the same work, side by side (``--htsim DIR``);
- ``python -m fabricsim.bench --one NAME``: one scenario, measured in this process.
"""
