"""Model files shipped with the package, written by ``advisor train`` from a seed (``aurora.pt``: Aurora's rule
policy, with ``aurora.json`` saying how it was trained). Read by ``optimizers.rewrites.pretrain.shipped``."""
