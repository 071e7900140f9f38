"""The whole-advisor kind ("all"): ``pipeline`` runs its parts (``plan.PARTS``: indexes, rewrites and knobs, in
that order), each on a shadow that has the changes validated before it, then ``bundle`` measures the database
changes together."""
