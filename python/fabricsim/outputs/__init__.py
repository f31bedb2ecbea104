"""What a run produces: tables, derived statistics, files and the HTML report.

- :mod:`fabricsim.outputs.tables`: decoding the core's column buffers; the
  tables of a run by name (:class:`~fabricsim.outputs.tables.RunTables`);
- :mod:`fabricsim.outputs.fct`: flow-completion-time statistics (a table
  derived in Python from the core's tables);
- :mod:`fabricsim.outputs.report`: the self-contained HTML report and its plots;
- :mod:`fabricsim.outputs.rundir`: the output directory, checked before a run
  and cleared of a previous run's files before writing;
- :mod:`fabricsim.outputs.results`: :class:`~fabricsim.outputs.results.Result`,
  which adds the derived tables and writes and reads run directories.
"""
