"""The whole-advisor kind ("all"): ``pipeline`` runs indexes, rewrites and knobs in order, each on a shadow
that has the changes validated before it, then ``bundle`` measures the database changes together."""

ORDER = ("indexes", "rewrites", "knobs")  # the kinds a whole run runs, in this order
