import sys, os
sys.path.insert(0, "/tmp/rv2")
from tests.optimizers.test_rewrite_regressions import Case, shadow
import harness

DATA = Case(harness.SCHEMA, {"c": 1000, "o": 1000},
            ("INSERT INTO c VALUES (1, 'a', 'x'), (2, 'a', NULL), (3, 'b', NULL), (4, NULL, 'y'), (5, 'A', 'z')",
             "INSERT INTO o VALUES (1, 1, 5), (2, 1, 7), (3, 2, 1.0), (4, NULL, 20), (5, 2, 1.00), (6, 3, NULL), "
             "(7, 4, 12), (8, 1, 5), (9, 5, 2)"),
            harness.NOT_NULL)

def test_probe(db):
    dsn = shadow(db, DATA)
    harness.check(dsn, os.environ["PROBES"], os.environ["PROBE_OUT"])
