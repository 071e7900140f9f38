"""Known library noise kept off the user's terminal (issue 43: no library warning reaches it): narrow filters for
the warnings the libraries we use raise on their own and we cannot act on, installed once by the faces' entry
points (the CLI's ``main``, the web app's lifespan). The project's own warnings, and every other library's, still
show: each filter names its library's module or its exact message."""

from __future__ import annotations

import sys
import warnings

# (action, message regex, category, module regex) for warnings.filterwarnings, one per known library warning
KNOWN: tuple[tuple[str, str, type[Warning], str], ...] = (
    # scipy.stats.qmc: a scrambled Sobol sample of a size that is not a power of two (the searches' start)
    ("ignore", r"The balance properties of Sobol' points require n to be a power of 2", UserWarning, ""),
    # torch: TorchScript's deprecation, raised when botorch/gpytorch (or our models) script a function
    ("ignore", r"`torch\.jit\.script(_method)?` is (deprecated|not supported)", DeprecationWarning, ""),
    ("ignore", r"", DeprecationWarning, r"torch\.jit(\..*)?$"),
)

# pyo3 objects (egglog's EGraph) reclaimed by the garbage collector on another thread than their own: the
# extension reports it as an unraisable RuntimeError ending with these words; the object is freed all the same
UNSENDABLE = "is unsendable, but is being dropped on another thread"

_installed = False


def install() -> None:
    """Install the filters (once per process; later calls do nothing)."""
    global _installed
    if _installed:
        return
    _installed = True
    for action, message, category, module in KNOWN:
        warnings.filterwarnings(action, message=message, category=category, module=module)
    previous = sys.unraisablehook

    def unraisable(info) -> None:
        if isinstance(info.exc_value, RuntimeError) and str(info.exc_value).endswith(UNSENDABLE):
            return
        previous(info)

    sys.unraisablehook = unraisable
