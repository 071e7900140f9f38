"""``advisor bench indexes``: index advisors on the same problems, what-if costs and real runs.

``bench`` is TPC-H with HypoPG what-if costs then real runs; ``workloads`` the ``--workloads`` run (app, JOB,
generated workloads: peers in the same run) over the data and statements of ``sources``; ``generated`` what the
generated workloads add up to."""
