"""The connector conformance suite (``tests/connectors/conformance.py``) on every engine of the factory
(PostgreSQL, MariaDB) and on a third one a test registers from the files docs/engines.md lists
(``tests/connectors/fake_engine``, over SQLite): the core ``Connector`` role behaves the same on each."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from connectors import factory
from tests.connectors import conformance, fake_engine

ROOT = Path(__file__).resolve().parents[2]
ENGINES = (*factory.ENGINES, fake_engine.ENGINE)  # the engines the advisor runs, and the fake third one
SANDBOXES = {"postgres": "pg", "mariadb": "maria"}  # the session fixture of each engine's sandbox (tests/conftest.py)


@pytest.fixture(scope="module", params=ENGINES)
def loaded(request):
    """(engine, the sandbox's connector, its password) of a fresh database of the engine with ``conformance.load``'s
    tables: the session's sandbox servers for the engines the advisor runs, a sandbox of the fake engine made
    through the factory once it is registered."""
    engine = request.param
    with pytest.MonkeyPatch.context() as mp:
        if engine == fake_engine.ENGINE:
            fake_engine.register(mp)
            sandbox = factory.sandbox(engine, "conformance").start()
            request.addfinalizer(sandbox.stop)
        else:
            sandbox = request.getfixturevalue(SANDBOXES[engine])
        name = "conformance_" + uuid.uuid4().hex[:8]
        sandbox.create_database(name)
        connector = sandbox.connector(name)  # a sandbox's: what-if may build indexes there (MariaDB's does)
        conformance.load(connector)
        yield engine, connector, sandbox.password


def test_the_connector_is_the_engines_and_keeps_its_password(loaded):
    engine, connector, password = loaded
    conformance.check_protocol(connector, engine, password)


@pytest.mark.parametrize("check", conformance.CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
def test_the_core_role_conforms(loaded, check):
    check(loaded[1])


def _listed_files() -> list[str]:
    """The files docs/engines.md says a third engine adds under connectors/<engine>/ (its "Adding an engine"
    section's list), in order."""
    text = (ROOT / "docs" / "engines.md").read_text()
    section = text.split("## Adding an engine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `connectors/<engine>/([a-z_]+\.py)`", section, re.M)


def test_the_fake_engine_is_made_of_exactly_the_files_the_docs_list():
    listed = _listed_files()
    assert listed and "connector.py" in listed and "sandbox.py" in listed
    made = sorted(p.name for p in Path(fake_engine.__file__).parent.glob("*.py"))
    # the fake engine implements the core role only: the other roles' module is the one it leaves out
    assert made == sorted(set(listed) - {"roles.py"}), (made, listed)

