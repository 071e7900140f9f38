"""The knob kind: ``pipeline`` (observe -> seeds -> search on a shadow -> validate -> recommend) and ``trials``
(one configuration set on the shadow and the workload replayed under it)."""
