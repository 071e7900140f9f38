"""``workloads.statements.sampling.analyze`` reads a statement in the dialect it is given (the connector's ``dialect``, passed
down as data): MySQL's backquoted identifiers are understood in "mysql" and not in "postgres"."""

from workloads.statements.binding import substitute
from workloads.statements.sampling import ParamUse, analyze, mark

MYSQL = ("SELECT 1 FROM `order items` o WHERE o.`ship date` BETWEEN CAST($1 AS DATE) AND $2 AND o.qty = $3 "
         "LIMIT $4")


def test_the_dialect_given_reads_the_statement():
    uses = analyze(substitute(MYSQL, mark), "mysql")
    assert uses[1] == ParamUse("order items", "ship date", "Between", "lo", cast="date")
    assert uses[2] == ParamUse("order items", "ship date", "Between", "hi")
    assert uses[3].column == "qty" and uses[3].side == "eq" and uses[4].side == "limit"
    assert analyze(substitute(MYSQL, mark), "postgres") == {}  # backquotes are no identifiers there
