"""What a trial runs against (``TrialTarget``): a database shadow with its workload replay
(``advisor.tuning.knobs.trials.ShadowTarget``) or a learned index's benchmark harness
(``advisor.tuning.learned_index.target.HarnessTarget``). A trial loop and a validation talk to either through these
three verbs, so the searches tune both unchanged:

- ``apply(config)``: set a configuration (a dict ``name -> text``); ``TrialFailed`` when it cannot run (the
  target is then back at a configuration that worked when the failure took it down).
- ``measure(rounds)``: ``rounds`` measured passes of the workload, each an ``ArmRound`` of latency samples by
  statement id (a shadow, ms) or by operation type (a harness, ns); ``TrialFailed`` when a pass fails.
- ``recover()``: back to the last configuration that worked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from advisor.core.errors import AdvisorError
from advisor.tuning.evidence import ArmRound


class TrialFailed(AdvisorError):
    """A configuration could not run (did not apply, crashed the target, ran past its limit, was unsafe);
    ``restarted``: the target restarted on the way; ``status``: ``failed``, or ``infeasible`` when the
    configuration breaks a constraint the target states (it never ran); ``error``: the type of the typed error
    that failed it (``TargetUnreachable``, ``TrialTimeout``, ...; empty when the configuration itself was refused
    by the target's own check), which the trial record keeps beside the message."""

    def __init__(self, message: str, restarted: bool = False, status: str = "failed", error: str = ""):
        super().__init__(message)
        self.restarted = restarted
        self.status = status
        self.error = error


class TrialTarget(Protocol):
    def apply(self, config: Mapping[str, str]) -> None: ...

    def measure(self, rounds: int) -> list[ArmRound]: ...

    def recover(self) -> None: ...
