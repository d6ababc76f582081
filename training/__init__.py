"""Training (self-play PPO) and evaluation (tournaments with ratings) for tablegym agents.

The wheel installs ``agents`` and ``training`` as top-level packages beside the games. A
package named ``agents`` in the directory Python starts from (a project's own ``agents/``
folder) comes first on ``sys.path`` and hides tablegym's: that project's ``from agents import
...`` gets its own package, as it expects, while everything here would import the wrong one and
fail far from the cause. So importing ``training`` checks which ``agents`` it would get and
says so in one line. The console commands (``tablegym-train`` ...) start from their own
directory and are not affected; ``tests/test_names.py`` shows each case.
"""

from importlib.util import find_spec as _find_spec
from pathlib import Path as _Path

_ours = _Path(__file__).resolve().parent.parent / "agents" / "__init__.py"
_spec = _find_spec("agents")
_origin = None if _spec is None else _spec.origin
if _origin is None or _Path(_origin).resolve() != _ours:
    raise ImportError(
        f"tablegym's training package needs tablegym's agents package, but 'agents' is "
        f"{_origin or 'missing'}: a package of that name where Python starts hides it; rename "
        "it, or start Python from another directory"
    )
