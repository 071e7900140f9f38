"""``advisor bench faults``: faults injected against real servers, one case each, and what the advisor did.

``bench`` runs the cases and reports them; ``base`` is a case and its outcome; ``env`` what every case shares (the
bench's production server and store, the advisor as a subprocess, progress lines); ``ledger`` the store's rows a fault
must not lose; ``llm`` a misbehaving LLM endpoint. The cases, by what fails: ``cases`` (shadow, target, advisor
process), ``stop_cases`` (a process stopped under a run), ``disk`` (the shadow's disk full), ``hang`` (a hung
target), ``api_cases`` (the server and the LLM) and ``prod_cases`` (the way to production)."""
