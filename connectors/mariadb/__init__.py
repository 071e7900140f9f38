"""MariaDB (10.11), the second engine: sandbox, connection, session, connector, plans, changes and shadow cloning.

Code above ``connectors`` reaches it only through ``connectors.factory`` and the protocols of ``connectors.base``.
"""
