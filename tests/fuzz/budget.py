"""The fuzzing suite's one budget: every property runs a fixed number of examples, with no
deadline (a loaded CI machine must not turn slowness into failures), derandomised in CI so a run
is reproducible (``CI=true``: the same examples every time), and without an example database in
the tree. ``ROCEWATCH_FUZZ_EXAMPLES`` scales the budget up for a longer hunt on a workstation::

    ROCEWATCH_FUZZ_EXAMPLES=5000 .venv/bin/pytest -q tests/fuzz

Each test applies :data:`FUZZ` (or :func:`budget` for a slower decoder) itself rather than
loading a global profile, so the other users of hypothesis in the suite keep their own settings.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: examples per property in ``make test`` (a few seconds for the whole suite)
EXAMPLES = int(os.environ.get("ROCEWATCH_FUZZ_EXAMPLES", "150"))
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")


def budget(share: float = 1.0) -> settings:
    """Settings for a property worth ``share`` of the default number of examples."""
    return settings(max_examples=max(10, int(EXAMPLES * share)), deadline=None,
                    derandomize=IN_CI, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


FUZZ = budget()
