"""The command line (Typer), one module per command group: ``main`` holds the app and the top commands (observe,
demo, the whole ``tune``); ``tune_commands`` a ``tune`` sub-command per kind (from the registry); ``targets_``,
``runs_``, ``recommendations_``, ``schedule_``, ``tokens_``, ``server_`` (serve, playground), ``rewrite_``,
``train_`` and ``bench_commands`` the rest; ``render`` draws what a kind's face reports, ``common`` holds the shared
options and the JSON output. The only place that may import ``web`` (for ``serve``)."""
