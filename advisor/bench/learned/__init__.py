"""``advisor bench learned-index``: every learned-index tuner at the same budget on datasets x workloads.

``bench`` runs the grid; ``measure`` measures arms side by side; ``meta`` meta-trains LITune on held-out tasks;
``drift`` runs through phases whose keys and mix change; ``report`` the targets and plots; ``compare`` sets two
runs' documents side by side."""
