"""The findings-vocabulary guard as a console script (``pairgate-finding-vocabulary``), so that
pre-commit's ``language: python`` can run it from an installed pairgate.

The guard itself is validators/validate-handoff-finding-vocabulary.py, a standalone file run by
path in CI; this loads that very file rather than keeping a second copy of its rules.
"""

from __future__ import annotations

import importlib.util
import sys

from pairgate.resources import resource_dir

GUARD = "validate-handoff-finding-vocabulary.py"


def console_main() -> None:
    path = resource_dir("validators") / GUARD
    spec = importlib.util.spec_from_file_location("validate_handoff_finding_vocabulary", path)
    assert spec is not None and spec.loader is not None
    guard = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = guard  # dataclasses look their module up while it executes
    spec.loader.exec_module(guard)
    sys.exit(guard.main(sys.argv[1:]))
