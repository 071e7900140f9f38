"""Users of the pipelines that are not the service's faces: one sub-package per ``advisor bench`` command
(``faults``, ``indexes``, ``knobs``, ``latency``, ``learned`` for ``learned-index``, ``models``, ``rewrites`` for
``rewrite``, ``service``), each with its run in ``bench`` (``service``: ``api`` and ``observation``); and beside
them the demo (``demo``: ``advisor demo``) and the playground (``playground``: ``advisor playground``'s shop
database, which the service and fault benches and the tests also run on). Every bench runs the same pipelines and
service as users do, never a second wiring of them."""
