"""``python -m advisor``: the advisor's command line (``advisor.cli.main``)."""

from advisor.cli.main import run

if __name__ == "__main__":
    run()
