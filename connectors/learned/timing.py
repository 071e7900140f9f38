"""The clock of the compiled loops: ``ticks()``, the CPU's cycle counter (``llvm.readcyclecounter``, rdtsc on x86)
read inside numba code at about 20 cycles a read, and ``ns_per_tick()``, its rate calibrated once per process
against ``time.perf_counter_ns`` (a 20 ms spin). Per-operation latencies are tick differences times that rate.
"""

from __future__ import annotations

import functools
import time

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _readcyclecounter(typingctx):
    sig = types.uint64()

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                            "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@njit(cache=True)
def ticks():
    return _readcyclecounter()


@functools.cache
def ns_per_tick() -> float:
    """Nanoseconds per cycle-counter tick (calibrated over 20 ms of wall time, the median of three)."""
    ticks()
    rates = []
    for _ in range(3):
        t0, c0 = time.perf_counter_ns(), ticks()
        while time.perf_counter_ns() - t0 < 20_000_000:
            pass
        t1, c1 = time.perf_counter_ns(), ticks()
        rates.append((t1 - t0) / max(1, c1 - c0))
    return sorted(rates)[1]
