from os import PathLike
from typing import List, Optional, Sequence, Tuple, TypedDict, Union

import numpy as np
import numpy.typing as npt

__version__: str
RULESETS: List[str]

class Error(Exception):
    """Every error of the package (the CLI's message)."""

class InvalidPosition(Error):
    """A board that is not 12 counts of 0..48 stones with at most 48 in all."""

class MissingLayer(Error):
    """A layer the answer needs is not built (the message names it and the command that builds it)."""

class DamagedFile(Error):
    """A layer file is damaged: header, size, checksum, a pack block (named)."""

class RulesetMismatch(Error):
    """A layer file holds another ruleset's (or layer's) values."""

class Step(TypedDict):
    board: List[int]
    value: int
    pit: int
    captured: Optional[int]

class Line(TypedDict):
    steps: List[Step]
    end: str

Board = Sequence[int]

class Database:
    """A database directory opened for one ruleset (native layers, packs, or the published 2002
    ``scores.N`` files); layers are opened lazily, each checked on first use."""

    def __init__(self, path: Union[str, "PathLike[str]"], rules: str = "awari", verify_checksums: bool = True) -> None: ...
    @property
    def rules(self) -> str: ...
    @property
    def path(self) -> str: ...
    def value(self, board: Board) -> int: ...
    def move_values(self, board: Board) -> List[Optional[int]]: ...
    def best_moves(self, board: Board) -> List[int]: ...
    def principal_variation(self, board: Board, max_plies: int = 40) -> Line: ...
    def values(self, boards: npt.NDArray[np.integer]) -> npt.NDArray[np.int8]: ...
    def layers_present(self) -> List[int]: ...
