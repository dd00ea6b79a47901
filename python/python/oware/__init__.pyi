from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypedDict, Union

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

class AnalysedMove(TypedDict):
    pit: int
    score: float
    bound: str
    exact: bool

class Analysis(TypedDict):
    best_pit: Optional[int]
    score: float
    exact: bool
    depth: int
    nodes: int
    nps: int
    seconds: float
    pv: List[int]
    moves: List[AnalysedMove]

class Engine:
    """The search engine: best moves and scores from any position, exact inside the built
    layers (and wherever the search proves them), estimates above them."""

    def __init__(self, path: Union[str, bytes, "PathLike[str]", "PathLike[bytes]", None] = None, rules: str = "awari", hash_mb: int = 64, threads: int = 1, max_table: Optional[int] = None) -> None: ...
    @property
    def tables(self) -> Optional[int]: ...
    def clear(self) -> None: ...
    def analyse(self, board: Sequence[int], movetime_ms: Optional[int] = None, depth: Optional[int] = None, nodes: Optional[int] = None, captured: Optional[Tuple[int, int]] = None, history: Optional[Sequence[Sequence[int]]] = None) -> Analysis:
        """Searches `board` for `movetime_ms` (1..86400000), to `depth` (1..100) or about `nodes`
        (1 s when none is given). `captured=(mover, opponent)`: counts 0..48 that make 48 with the
        board; the score is then the game's. `history`: the game's positions since its last
        capture (mover-first boards, oldest first, at most 10000), each leading to the next and
        the last to `board` by a move that captures nothing (InvalidPosition otherwise). A number
        out of its range raises ValueError naming the argument."""
        ...

class Database:
    """A database directory opened for one ruleset (native layers, packs, or the published 2002
    ``scores.N`` files); layers are opened lazily, each checked on first use."""

    def __init__(self, path: Union[str, bytes, "PathLike[str]", "PathLike[bytes]"], rules: str = "awari", verify_checksums: bool = True, reads: str = "map") -> None: ...
    @property
    def rules(self) -> str: ...
    @property
    def path(self) -> str: ...
    def value(self, board: Board) -> int: ...
    def move_values(self, board: Board) -> List[Optional[int]]: ...
    def best_moves(self, board: Board) -> List[int]: ...
    def principal_variation(self, board: Board, max_plies: int = 40) -> Line: ...
    def values(self, boards: npt.NDArray[np.integer]) -> npt.NDArray[np.int8]: ...
    def dtc(self, board: Board) -> Optional[int]:
        """The depth to capture (``oware build --dtc``): plies to the value's first capture with
        best play; None for value 0. Raises MissingLayer when the depths are not built."""
    def move_dtcs(self, board: Board) -> List[Optional[int]]:
        """Per pit: 0 for a capture or an ending move, else the child's depth; None for an
        illegal move or a child of value 0."""
    def dtcs(self, boards: npt.NDArray[np.integer]) -> npt.NDArray[np.int32]:
        """The depths of a batch (as ``values``): int32, -1 where the value is 0."""
    def layers_present(self) -> List[int]: ...
    def check_open_files(self) -> None: ...

class VerifyReport(TypedDict):
    """The report of ``verify``: the document of ``oware verify --json`` (without
    ``schema_version``) plus ``outcome`` and ``exit_code``."""

    rules: str
    dir: str
    format: str
    layers_requested: List[int]
    layers: List[Dict[str, Any]]
    facts: List[Dict[str, Any]]
    positions_checked: int
    mismatches: int
    seconds: float
    positions_per_second: float
    bounds: List[Dict[str, Any]]
    bounds_checked: int
    bounds_mismatches: int
    dtc: List[Dict[str, Any]]
    dtc_checked: int
    dtc_mismatches: int
    manifest: Optional[Dict[str, Any]]
    ok: bool
    summary: str
    outcome: str
    exit_code: int

def verify(
    path: Union[str, bytes, "PathLike[str]", "PathLike[bytes]"],
    rules: str = "awari",
    layers: Union[None, int, Tuple[int, int]] = None,
    max_stones: Optional[int] = None,
    bounds: bool = False,
    dtc: bool = False,
) -> VerifyReport:
    """Verifies a database directory as ``oware verify`` does: every layer's header and checksum,
    every value re-derived from its children, the bounds and depths to capture (all present;
    required with ``bounds`` / ``dtc``), the published facts, a pack manifest.
    Problems in the files are in the report (``ok``, ``outcome``, each layer's ``status``), not
    raised. Runs on every core with the GIL released."""
