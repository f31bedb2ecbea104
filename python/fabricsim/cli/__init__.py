"""The ``fabricsim`` command (:func:`fabricsim.cli.main.main`), one module per subcommand.

Each subcommand module has ``add_parser(commands)``, which adds its parser
and handler; :mod:`~fabricsim.cli.main` lists the modules in ``--help`` order.
A handler imports what it needs when it runs, so that ``fabricsim --help``
and light commands do not pay for polars, matplotlib, duckdb or Ray.
"""
