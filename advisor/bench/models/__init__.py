"""``advisor bench models``: the shipped models against training per target, on targets no model was trained on.

``bench`` runs it (and holds the part of Aurora's rule policy); ``litune`` LITune's models; ``ia2`` IA2's agent."""
