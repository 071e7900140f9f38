"""The command line (Typer): ``main`` holds the app and the tuning/bench commands, ``service_commands`` the
server-side commands, ``render`` the terminal output. The only place that may import ``web`` (for ``serve``)."""
