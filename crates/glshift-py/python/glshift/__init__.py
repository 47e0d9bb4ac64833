"""glshift for Python: MUL (Minimum Uncertainty Learning), its baselines and the label-shift
estimators of the glshift Rust library, with scikit-learn and skada conventions.

>>> import glshift
>>> clf = glshift.MUL(seed=0).fit(X, y, sample_domain=sd)   # sd > 0 source, sd < 0 target (y = -1)
>>> clf.predict(X_target), clf.target_prior_, clf.importance_weights_

See docs/python.md in the glshift repository.
"""

from ._cond_shift import ConditionalTest, conditional_shift_test
from ._core import __version__
from ._estimators import METHODS, MUL, Adapter, SourceOnly, load
from ._select import RULES, Selection, select
from ._shift import SUITE, ShiftResult, bbse, bbse_qp, estimate_shift, mlls, rlls

__all__ = [
    "__version__",
    "METHODS",
    "MUL",
    "SourceOnly",
    "Adapter",
    "load",
    "select",
    "Selection",
    "RULES",
    "SUITE",
    "ShiftResult",
    "estimate_shift",
    "bbse",
    "bbse_qp",
    "rlls",
    "mlls",
    "ConditionalTest",
    "conditional_shift_test",
]
