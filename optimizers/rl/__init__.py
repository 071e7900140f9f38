"""The reinforcement-learning core that IA2 (``optimizers.indexes.td3``), LITune
(``optimizers.learned_index.litune_agent``) and Aurora (``optimizers.rewrites.search.aurora``) build on: ``networks``
(the multilayer perceptrons and masking), ``replay`` (a ring buffer of transitions), ``td3`` (the shared
hyper-parameters and TD3's update: twin critics' minimum, target policy smoothing, Polyak averaging, the delayed
actor update) and ``persistence`` (a blob of networks and metadata to a file or to text, and back). It imports no
optimizer kind: each agent keeps its own state, action and reward, and its networks' layout (the shipped models'
weights are keyed by it)."""
