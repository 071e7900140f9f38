"""What may be applied: an approved recommendation whose validation accepted it. A slower statement that the
index validation recorded as noise (its plan uses none of the kept indexes) does not block the apply it did not
block the recommendation; any other regression does; a rewrite is never applied."""

import pytest

from advisor.core.domain import Evidence, Recommendation, StatementEvidence
from advisor.core.errors import Conflict
from advisor.service.production import check_applicable


def rec(regressed: str | None, noise: tuple[str, ...] = (), kind: str = "indexes") -> Recommendation:
    statements = tuple(StatementEvidence(q, "", 1.0, 10.0, 5.0 if q != regressed else 13.0,
                                         0.5 if q != regressed else 1.3, (0.4, 0.6) if q != regressed else (1.2, 1.4),
                                         q == regressed) for q in ("a", "b"))
    ev = Evidence(3, (20.0,) * 3, (10.0,) * 3, 0.4, (0.3, 0.5), statements, 0.02, 0.1)
    return Recommendation("r1", "t1", kind, "extend", (), ("CREATE INDEX ...",), ("DROP INDEX ...",), False,
                          "approved", 0.0, ev, details={"unexplained_slowdowns": list(noise)})


def test_a_clean_validated_recommendation_applies():
    check_applicable(rec(None))


def test_noise_recorded_by_the_validation_does_not_block_it():
    check_applicable(rec("b", noise=("b",)))


def test_a_regression_blocks_it():
    with pytest.raises(Conflict, match="no accepted validation evidence"):
        check_applicable(rec("b"))


def test_a_rewrite_is_never_applied():
    with pytest.raises(Conflict, match="never applied"):
        check_applicable(rec(None, kind="rewrites"))
