"""Model files shipped with the package, written by ``advisor train`` from a seed (``aurora.pt``: Aurora's rule
policy, with ``aurora.json`` saying how it was trained; ``litune-*.pt``: LITune's models; ``ia2.pt``: IA2's agent,
read by ``optimizers.indexes.ia2_shipped``). Read by ``optimizers.rewrites.search.pretrain.shipped``."""
