"""Operation streams for the learned-index harness: op codes and ``OpStream``, one phase of operations executed in
order inside one compiled loop. Only numpy here, so ``workloads`` builds streams without importing an engine.

>>> s = OpStream.of([LOOKUP, INSERT, RANGE], [5, 7, 1], [0, 0, 10])
>>> len(s), s.counts()
(3, {'lookup': 1, 'insert': 1, 'range': 1})
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOOKUP, INSERT, RANGE = 0, 1, 2
OP_NAMES = ("lookup", "insert", "range")
MAX_KEY = np.uint64(2**64 - 2)  # 2**64 - 1 is the gap sentinel of the gapped arrays


@dataclass(frozen=True)
class OpStream:
    """``ops`` uint8 op codes; ``keys`` uint64 (the key looked up, inserted, or a range scan's start);
    ``lengths`` uint32 range-scan lengths in keys (0 for other ops)."""

    ops: np.ndarray
    keys: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, ops, keys, lengths=None) -> OpStream:
        ops = np.ascontiguousarray(ops, dtype=np.uint8)
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        lengths = (np.zeros(len(ops), dtype=np.uint32) if lengths is None
                   else np.ascontiguousarray(lengths, dtype=np.uint32))
        return cls(ops, keys, lengths)

    def __len__(self) -> int:
        return len(self.ops)

    def counts(self) -> dict[str, int]:
        return {name: int(np.count_nonzero(self.ops == code)) for code, name in enumerate(OP_NAMES)}

    def check(self) -> OpStream:
        """The stream in the dtypes the compiled loops take; ValueError naming the first problem."""
        if not (len(self.ops) == len(self.keys) == len(self.lengths)):
            raise ValueError("op stream: ops, keys and lengths differ in length")
        s = OpStream.of(self.ops, self.keys, self.lengths)
        if len(s) and s.ops.max() > RANGE:
            raise ValueError(f"op stream: unknown op code {int(s.ops.max())}")
        if len(s) and s.keys.max() > MAX_KEY:
            raise ValueError("op stream: key 2**64-1 is reserved")
        return s
