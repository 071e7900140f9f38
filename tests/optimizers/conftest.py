"""The conformance suite's share of the default run: on engines other than the default, a rewrite search's checks
(seconds of e-graph saturation per ask, over statements in that engine's dialect) run with ``-m slow``; the
rewrite pipeline's own MariaDB tests (tests/advisor/tuning/rewrites/test_rewrite_mariadb.py) stay in the default run."""

import pytest

from connectors import factory


@pytest.hookimpl(tryfirst=True)  # before ``-m 'not slow'`` deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        engine, cls = params.get("engine"), params.get("cls")
        if engine not in (None, factory.DEFAULT_ENGINE) and getattr(cls, "kind", None) == "rewrites":
            item.add_marker(pytest.mark.slow)
