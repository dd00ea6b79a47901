"""Exact values of Oware (Awari) positions, from the endgame databases `oware build` writes.

>>> import oware
>>> db = oware.Database("databases", rules="awari")
>>> db.value([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0])
0

Boards are 12 pit counts in mover-first form: pits 0..5 are the houses of the player to move in
sowing order, pits 6..11 the opponent's. Values are from the mover's point of view: the stones
he will still capture minus those the opponent will, with best play (endless play counts 0).
"""

from ._oware import (
    Database,
    Engine,
    DamagedFile,
    Error,
    InvalidPosition,
    MissingLayer,
    RulesetMismatch,
    RULESETS,
    __version__,
    verify,
)

__all__ = [
    "Database",
    "Engine",
    "Error",
    "InvalidPosition",
    "MissingLayer",
    "DamagedFile",
    "RulesetMismatch",
    "RULESETS",
    "__version__",
    "verify",
]
