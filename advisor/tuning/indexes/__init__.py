"""The index kind: ``pipeline`` (observe -> ``problem`` -> an optimizer's set -> ``sizing`` and ``repair`` ->
``validation`` on a shadow with ``timing`` -> ``drops`` of unused indexes -> recommend) and ``explain`` (why
each statement got or did not get an index)."""
