"""Where a run's shadows come from: one ``Shadows`` per run, made by the service and passed down on the pipeline's
``Context``; every pipeline asks it for each shadow (``clone``), never the factory directly.

Three methods, chosen here and named in the run's header and its JSON (``doc``):
- a **thin clone of the warm replica** when the target has one (``connectors.replica``): the replica is started
  if it stopped, its position on the target is read before the run observes the target (``of_replica``), and the
  first clone waits (at most ``ADVISOR_REPLICA_WAIT_S``) until the replica has replayed past it, so the shadow
  holds what the observation saw; when it does not get there in time, the run says how far behind it is and goes
  on. A thin clone that fails falls back to a full copy, said so;
- a **full copy** (the engine's dump and restore) when there is no replica, or it cannot be used (said why);
- a **sampled copy** when the run asks for ``--sample-percent``: each validation's figures carry the error its
  sample implies (``validation.sampling_error``: the gain weighted by the target's own statement times beside it).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from advisor.core.errors import AdvisorError
from advisor.core.progress import Say, heartbeat, silent

if TYPE_CHECKING:
    from connectors.base import Connector, Shadow
    from connectors.replica import Lag, Replica

THIN, FULL, SAMPLED = "thin clone", "full copy", "sampled copy"


def sampled_line(percent: float) -> str:
    return f"{SAMPLED} {percent:g}%: figures carry the sampling error"


class Shadows:
    """The source of a run's shadows: ``replica`` (a warm replica of the target, with ``point``, the target's
    position read before the observation) or none (``unavailable``: why the replica the target has cannot be
    used). ``used``: what the last shadow actually was (``doc``)."""

    def __init__(self, replica: Replica | None = None, point: str | None = None, *, unavailable: str = "",
                 wait_s: float | None = None):
        self.replica, self.point, self.unavailable = replica, point, unavailable
        self.wait_s = wait_s
        self.used: dict | None = None
        self._caught_up: Lag | None = None

    @classmethod
    def of_replica(cls, replica: Replica, target: Connector, say: Say = silent,
                   wait_s: float | None = None) -> Shadows:
        """The shadows of a target with a warm replica: started if it stopped, the target's position read now
        (call it before the observation); a replica that cannot run gives full copies, saying why."""
        try:
            replica.ensure_running(say)
            point = replica.position(target)
        except AdvisorError as e:
            return cls(unavailable=f"the warm replica is unavailable: {e}")
        return cls(replica, point, wait_s=wait_s)

    # --- what this run will use --------------------------------------------------------------------------------

    def planned(self, sample_percent: float | None = None) -> dict:
        """The method a run with ``sample_percent`` gets, as its header names it (the replica's lag now)."""
        if sample_percent:
            return {"method": SAMPLED, "line": sampled_line(sample_percent), "sample_percent": sample_percent}
        if self.replica is not None:
            return _thin(self._lag(), self._seed())
        return {"method": FULL, "line": f"{FULL} ({self.unavailable or 'no replica'})"}

    def doc(self, sample_percent: float | None = None) -> dict:
        """What the run's shadows were (the last one made), else what they would have been: the ``shadow`` field of
        a run's JSON."""
        return self.used or self.planned(sample_percent)

    def _seed(self) -> str | None:
        """How the replica's copy was first made ("mariadb-backup", "dump"), where its record says."""
        from connectors.replica import seed_of

        return seed_of(self.replica.directory)[0]

    def _lag(self) -> Lag | None:
        try:
            return self.replica.lag()
        except AdvisorError:
            return None

    # --- a shadow --------------------------------------------------------------------------------------------

    def clone(self, connector: Connector, *, sample_percent: float | None = None, say: Say | None = None,
              extra_settings: dict[str, str] | None = None, sample_min_rows: int = 100_000) -> Shadow:
        """A running shadow of ``connector``'s database by this run's method (``factory.clone``'s arguments)."""
        from connectors import factory  # on first use: the engines' packages take a moment to import

        say = say or silent
        if self.replica is not None and not sample_percent:
            try:
                lag = self._wait(connector, say)
                shadow = factory.clone(connector, replica=self.replica, extra_settings=extra_settings, say=say)
                self.used = _thin(lag, self._seed())
                return shadow
            except AdvisorError as e:
                self.replica, self.unavailable = None, f"the thin clone failed: {e}"
                say(f"shadow: {self.unavailable}; falling back to a full copy")
        method = self.planned(sample_percent)
        with heartbeat(say, f"making the shadow (a {method['method']})") as beating:  # a copy of a large database is long
            shadow = factory.clone(connector, sample_percent=sample_percent, sample_min_rows=sample_min_rows,
                                   extra_settings=extra_settings, say=beating)
        self.used = method
        return shadow

    def _wait(self, connector: Connector, say: Say) -> Lag:
        """The replica's lag once it replayed past ``point`` (waited for once per run), or when the wait ran out,
        said with how far behind it is."""
        if self._caught_up is not None:
            return self._caught_up
        if self.wait_s is None:
            from advisor.core.settings import get_settings

            self.wait_s = get_settings().replica_wait_s
        point = self.point if self.point is not None else self.replica.position(connector)
        started = time.monotonic()
        lag = self.replica.wait_for(point, self.wait_s, say)
        if time.monotonic() - started >= self.wait_s:
            say(f"shadow: the warm replica has not replayed what the observation saw within {self.wait_s:g} s "
                f"({lag.line()}); the thin clone may miss the latest writes")
        self._caught_up = lag
        return lag


def _thin(lag: Lag | None, seed: str | None = None) -> dict:
    """A thin clone's doc: its header line (the replica's lag, and how it was seeded where it says), the lag's
    figures."""
    seeded = {"seed": seed} if seed else {}
    of = f"{THIN} of the warm replica" + (f" (seeded by {seed})" if seed else "")
    if lag is None:
        return {"method": THIN, "line": f"{of} (its lag could not be read)", **seeded}
    return {"method": THIN, "line": f"{of}, {lag.line()}", "behind_bytes": lag.behind_bytes,
            "behind_s": lag.behind_s, "state": lag.state, **seeded}

