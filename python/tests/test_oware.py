"""Tests of the Python package: values against the CLI, move values, best moves, the best line,
batches (every integer dtype, parallel, bad input), packs, the published files and errors."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import oware

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = [1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]
# The eleven positions (mover-first, oldest first) before [0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
# in a game without a capture: each leads to the next by a move, the last to that root, and the
# root's move E leads back to the first.
GAME_SINCE_CAPTURE = [
    [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1],
    [0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1], [0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0],
    [0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1], [0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1],
    [0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0],
]


def oware_cli():
    """The `oware` binary of this checkout (built by `cargo build --release` when missing)."""
    exe = ROOT / "target" / "release" / "oware"
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    return str(exe)


@pytest.fixture(scope="session")
def db_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("db")
    subprocess.run([oware_cli(), "build", "--max-stones", "16", "--dir", str(d), "-q"], check=True)
    return d


@pytest.fixture(scope="session")
def db(db_dir):
    return oware.Database(db_dir)


def cli_json(*args):
    out = subprocess.run([oware_cli(), *args, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_published_position(db):
    assert db.value(PUBLISHED) == 0
    assert db.move_values(PUBLISHED) == [-1, -1, -2, -2, -2, 0]
    assert db.best_moves(PUBLISHED) == [5]
    assert db.rules == "awari"
    assert "Database(" in repr(db)
    assert db.layers_present() == list(range(17))


def test_any_sequence_and_illegal_moves(db):
    assert db.value((0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0)) == -1
    assert db.value(np.array([1] + [0] * 11, dtype=np.int64)) == 1
    mv = db.move_values([0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0])
    assert mv[:4] == [None] * 4 and mv[5] is not None
    assert db.best_moves([0] * 12) == []


def test_principal_variation(db):
    line = db.principal_variation(PUBLISHED, max_plies=6)
    # The names of `oware query --json`'s pv_end.reason.
    assert line["end"] in ("game_over", "endless_play", "repetition", "cycle", "ply_limit")
    assert db.principal_variation(PUBLISHED, max_plies=1)["end"] == "ply_limit"
    assert db.principal_variation([0] * 11 + [1])["end"] == "game_over"
    assert line["steps"][0]["board"] == PUBLISHED
    assert line["steps"][0]["pit"] == 5 and line["steps"][0]["captured"] == 3
    assert len(line["steps"]) <= 6
    for s in line["steps"]:
        assert s["value"] == db.value(s["board"])


def test_values_match_the_cli_and_single_probes(db, db_dir):
    rng = np.random.default_rng(7)
    n = rng.integers(0, 17, size=5000)
    boards = np.stack([rng.multinomial(k, [1 / 12] * 12) for k in n])
    got = db.values(boards)
    assert got.dtype == np.int8 and got.shape == (5000,)
    for b, v in zip(boards[:300], got[:300]):
        assert db.value(b.tolist()) == v
    doc = cli_json("query", "--dir", str(db_dir), " ".join(map(str, boards[0])))
    assert doc["value"] == got[0]
    for dtype in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        assert np.array_equal(db.values(boards.astype(dtype)), got)
    assert db.values(np.zeros((0, 12), dtype=np.uint8)).shape == (0,)


def test_bad_input(db):
    with pytest.raises(oware.InvalidPosition, match="12 pits"):
        db.value([1, 2, 3])
    with pytest.raises(oware.InvalidPosition):
        db.value("not a board")
    with pytest.raises(oware.InvalidPosition, match="0..48"):
        db.value([-1] + [0] * 11)
    with pytest.raises(oware.InvalidPosition, match="49"):
        db.value([49] + [0] * 11)
    with pytest.raises(oware.InvalidPosition):
        db.value([40, 9] + [0] * 10)
    boards = np.zeros((10, 12), dtype=np.int32)
    boards[7, 3] = -2
    with pytest.raises(oware.InvalidPosition, match="row 7"):
        db.values(boards)
    with pytest.raises(TypeError, match="contiguous"):
        db.values(np.zeros((10, 24), dtype=np.uint8)[:, ::2])
    with pytest.raises(TypeError):
        db.values(np.zeros((10, 12), dtype=np.float64))
    with pytest.raises(ValueError, match="shape"):
        db.values(np.zeros((10, 11), dtype=np.uint8))
    assert issubclass(oware.MissingLayer, oware.Error) and issubclass(oware.DamagedFile, oware.Error)


def test_missing_layer_and_ruleset(db_dir, tmp_path):
    db = oware.Database(db_dir)
    with pytest.raises(oware.MissingLayer, match="layer 20 of awari is not built"):
        db.value([20] + [0] * 11)
    with pytest.raises(oware.MissingLayer, match="row 1"):
        db.values(np.array([[1] + [0] * 11, [20] + [0] * 11], dtype=np.uint8))
    with pytest.raises(oware.Error, match="chess"):
        oware.Database(db_dir, rules="chess")
    assert "abapa" in oware.RULESETS
    # A file of another ruleset under this ruleset's name.
    other = tmp_path / "other"
    shutil.copytree(db_dir / "awari", other / "abapa")
    with pytest.raises(oware.RulesetMismatch):
        oware.Database(other, rules="abapa").value([1] + [0] * 11)


def test_packs_published_files_and_damage(db, db_dir, tmp_path):
    packs = tmp_path / "packs"
    subprocess.run([oware_cli(), "pack", "--dir", str(db_dir), "--out", str(packs), "-q"], check=True)
    pdb = oware.Database(packs)
    rng = np.random.default_rng(1)
    boards = np.stack([rng.multinomial(k, [1 / 12] * 12) for k in rng.integers(0, 17, size=3000)])
    assert np.array_equal(pdb.values(boards), db.values(boards))
    vu = tmp_path / "vu"
    subprocess.run([oware_cli(), "export", "--format", "vu", "--dir", str(db_dir), "--out", str(vu), "--compress", "-q"], check=True)
    assert np.array_equal(oware.Database(vu).values(boards), db.values(boards))
    # A damaged pack block is an exception naming the file, never a value.
    f = packs / "awari" / "layer-16.owpk"
    b = bytearray(f.read_bytes())
    b[len(b) // 2] ^= 0x40
    f.write_bytes(bytes(b))
    with pytest.raises(oware.DamagedFile, match="layer-16.owpk"):
        oware.Database(packs).values(boards)


def test_threads_share_a_database(db):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda _: db.value(PUBLISHED), range(200)))
    assert results == [0] * 200


def test_exception_classes_follow_error_kinds(db_dir, tmp_path):
    # Mover-first: 4 stones in pit 0, no capture possible, so only layer 4 is opened.
    four = [4] + [0] * 11
    # A file holding another layer: the class of a file of another ruleset (a foreign file).
    other = tmp_path / "other" / "awari"
    other.mkdir(parents=True)
    shutil.copy(db_dir / "awari" / "layer-03.owdb", other / "layer-04.owdb")
    with pytest.raises(oware.RulesetMismatch, match="expected layer 4"):
        oware.Database(other.parent).value(four)
    # A truncated layer file: damaged.
    short = tmp_path / "short" / "awari"
    short.mkdir(parents=True)
    data = (db_dir / "awari" / "layer-04.owdb").read_bytes()
    (short / "layer-04.owdb").write_bytes(data[: len(data) - 1])
    with pytest.raises(oware.DamagedFile, match="layer-04.owdb"):
        oware.Database(short.parent).value(four)
    # A published directory without the layer: missing, as a native one.
    vu = tmp_path / "vu"
    vu.mkdir()
    (vu / "scores.0").write_bytes(b"")
    with pytest.raises(oware.MissingLayer, match="scores.4"):
        oware.Database(vu).value(four)
    # A directory where the layer file should be: an I/O error, of the base class only.
    odd = tmp_path / "odd" / "awari" / "layer-04.owdb"
    odd.mkdir(parents=True)
    with pytest.raises(oware.Error, match="a directory") as e:
        oware.Database(odd.parent.parent).value(four)
    assert type(e.value) is oware.Error
    for cls in (oware.InvalidPosition, oware.MissingLayer, oware.DamagedFile, oware.RulesetMismatch):
        assert issubclass(cls, oware.Error)

def test_verify_reports_good_damaged_and_wrong_directories(tmp_path):
    good = tmp_path / "good"
    subprocess.run([oware_cli(), "build", "--max-stones", "8", "--dir", str(good), "-q"], check=True)
    r = oware.verify(good)
    assert r["ok"] is True and r["outcome"] == "ok" and r["exit_code"] == 0
    assert r["layers_requested"] == [0, 8] and r["rules"] == "awari" and r["format"] == "native"
    assert [e["layer"] for e in r["layers"]] == list(range(9))
    assert all(e["status"] == "ok" and e["mismatches"] == 0 for e in r["layers"])
    assert r["summary"].startswith("OK: layers 0..8 of awari")
    # The same report as the command line's (timings aside).
    cli = cli_json("verify", "--dir", str(good), "--quiet")
    for key in ("ok", "summary", "layers_requested", "positions_checked", "facts", "manifest"):
        assert r[key] == cli[key], key
    assert oware.verify(good, layers=(7, 8))["layers"][0]["status"] == "dependency"
    assert oware.verify(good, layers=8)["layers_requested"] == [8, 8]
    assert oware.verify(good, max_stones=5)["layers_requested"] == [0, 5]
    with pytest.raises(oware.MissingLayer, match="abapa"):
        oware.verify(good, rules="abapa")

    # A copy with one payload byte flipped: the checksum finds it, the report says damaged.
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    f = bad / "awari" / "layer-08.owdb"
    b = bytearray(f.read_bytes())
    b[-100] ^= 0x01
    f.write_bytes(bytes(b))
    r = oware.verify(bad)
    assert r["ok"] is False and r["outcome"] == "damaged_layer" and r["exit_code"] == 5
    entry = r["layers"][8]
    assert entry["status"] == "damaged" and entry["error"]["kind"] == "damaged_file"
    assert "layer-08.owdb" in entry["error"]["message"]
    assert all(e["status"] == "ok" for e in r["layers"][:8])
    assert "damaged or unreadable layer 8" in r["summary"]

    # The published format has no checksum: a changed value is found by re-deriving it.
    vu = tmp_path / "vu"
    subprocess.run([oware_cli(), "export", "--format", "vu", "--dir", str(good), "--out", str(vu), "-q"], check=True)
    assert oware.verify(vu)["format"] == "vu" and oware.verify(vu)["ok"] is True
    f = vu / "scores.8"
    b = bytearray(f.read_bytes())
    b[len(b) // 2] = (b[len(b) // 2] + 2) % 256
    f.write_bytes(bytes(b))
    r = oware.verify(vu, layers=8)
    assert r["outcome"] == "wrong_values" and r["exit_code"] == 8 and r["mismatches"] >= 1
    assert r["layers"][-1]["status"] == "mismatch" and r["layers"][-1]["first_mismatches"]

    # Nothing to verify (an empty directory; one that does not exist), bad arguments.
    (tmp_path / "empty").mkdir()
    with pytest.raises(oware.MissingLayer):
        oware.verify(tmp_path / "empty")
    with pytest.raises(oware.Error, match="No such file or directory"):
        oware.verify(tmp_path / "nothing")
    with pytest.raises(ValueError):
        oware.verify(good, layers=(5, 3))
    with pytest.raises(ValueError):
        oware.verify(good, layers=2, max_stones=4)
    with pytest.raises(oware.Error, match="chess"):
        oware.verify(good, rules="chess")


def test_a_missing_directory_fails_at_open_and_any_path_type_opens(db_dir, tmp_path):
    for bad in (tmp_path / "nonexistent", "", str(tmp_path / "nonexistent")):
        with pytest.raises(oware.Error, match="No such file or directory"):
            oware.Database(bad)
        with pytest.raises(oware.Error, match="No such file or directory"):
            oware.verify(bad)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(oware.Error, match="not a directory"):
        oware.Database(afile)
    with pytest.raises(TypeError, match="os.PathLike"):
        oware.Database(42)
    # A directory whose name is not UTF-8: as bytes, and as the str os.fsdecode gives.
    raw = os.path.join(os.fsencode(tmp_path), b"db-\xff\xfe")
    shutil.copytree(os.fsencode(db_dir), raw)
    assert oware.Database(raw).value(PUBLISHED) == 0
    assert os.fsencode(oware.Database(raw).path) == raw  # the name round-trips
    assert oware.Database(os.fsdecode(raw)).value(PUBLISHED) == 0
    assert oware.Database(Path(os.fsdecode(raw))).move_values(PUBLISHED) == [-1, -1, -2, -2, -2, 0]
    assert oware.verify(raw, max_stones=6)["ok"]


def test_other_byte_order_and_unaligned_arrays_give_the_same_values(db):
    rng = np.random.default_rng(7)
    boards = np.zeros((5000, 12), dtype=np.uint16)
    for row in boards:
        for _ in range(rng.integers(0, 17)):
            row[rng.integers(0, 12)] += 1
    expected = db.values(boards)
    assert list(expected[:50]) == [db.value(b) for b in boards[:50]]
    swapped = boards.astype(boards.dtype.newbyteorder(">" if np.little_endian else "<"))
    assert not swapped.dtype.isnative
    assert (db.values(swapped) == expected).all()
    # Unaligned: the rows of a buffer that starts one byte into an aligned one.
    buf = np.zeros(boards.nbytes + 1, dtype=np.uint8)
    unaligned = np.frombuffer(buf.data, dtype=np.uint16, count=boards.size, offset=1).reshape(boards.shape)
    unaligned[...] = boards
    assert not unaligned.flags.aligned and unaligned.flags.c_contiguous
    assert (db.values(unaligned) == expected).all()


def test_values_work_in_a_forked_child_after_the_parent_used_them(db):
    boards = np.zeros((20000, 12), dtype=np.uint8)
    boards[:, 0] = np.arange(20000) % 9
    boards[:, 7] = np.arange(20000) % 5
    expected = db.values(boards)  # the parent's worker threads exist now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no worker threads of the parent's pool
        try:
            ok = (db.values(boards) == expected).all() and oware.verify(db.path, max_stones=4)["ok"]
            os.write(write, b"ok" if ok else b"wrong")
        finally:
            os._exit(0)
    os.close(write)
    import select

    ready, _, _ = select.select([read], [], [], 120)
    if not ready:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("db.values() hung in a forked child")
    answer = os.read(read, 16)
    os.waitpid(pid, 0)
    assert answer == b"ok"


def test_check_open_files_names_a_layer_changed_under_the_reader(db_dir, tmp_path):
    copy = tmp_path / "db"
    shutil.copytree(db_dir, copy)
    db = oware.Database(copy)
    assert db.value([3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) == db.value([3] + [0] * 11)
    db.check_open_files()
    layer = copy / "awari" / "layer-03.owdb"
    os.truncate(layer, 100)  # truncated in place under the reader (not read after: no SIGBUS)
    with pytest.raises(oware.DamagedFile, match="layer-03"):
        db.check_open_files()


def test_pread_reads_survive_a_layer_truncated_under_the_reader(db_dir, tmp_path):
    copy = tmp_path / "db"
    shutil.copytree(db_dir, copy)
    db = oware.Database(copy, reads="pread")
    board = [0] * 11 + [16]  # layer 16's last index: its value lies at the file's end
    before = db.value(board)
    os.truncate(copy / "awari" / "layer-16.owdb", 5096)
    # A mapped reader would die here with SIGBUS (the page is gone); this one answers from its
    # private copy of a small layer (or raises, reading past the end), and the identity check
    # names the file.
    try:
        assert db.value(board) == before
    except oware.DamagedFile as e:
        assert "layer-16" in str(e)
    with pytest.raises(oware.DamagedFile, match="layer-16"):
        db.check_open_files()
    with pytest.raises(ValueError, match="pread"):
        oware.Database(copy, reads="mmap")


# Depths to capture (`oware build --dtc`).

CAPTURE_IN_ONE = [0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0]


@pytest.fixture(scope="session")
def dtc_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("dtc")
    subprocess.run([oware_cli(), "build", "--max-stones", "10", "--dir", str(d), "--dtc", "-q"], check=True)
    return oware.Database(d)


def layer_boards(n):
    """Every board of n stones (stars and bars), as an (N, 12) uint8 array."""
    import itertools

    rows = []
    for bars in itertools.combinations(range(n + 11), 11):
        prev, row = -1, []
        for b in bars:
            row.append(b - prev - 1)
            prev = b
        row.append(n + 11 - prev - 1)
        rows.append(row)
    return np.array(rows, dtype=np.uint8)


def test_dtc_of_a_capture_in_one_and_of_value_zero(dtc_db):
    assert dtc_db.value(CAPTURE_IN_ONE) > 0
    assert dtc_db.dtc(CAPTURE_IN_ONE) == 1
    moves = dtc_db.move_dtcs(CAPTURE_IN_ONE)
    assert len(moves) == 6 and moves[:4] == [None] * 4 and moves[5] == 0
    assert dtc_db.dtc([0] * 12) is None
    assert dtc_db.dtc(np.array(CAPTURE_IN_ONE, dtype=np.int64)) == 1
    # The best moves capture at once.
    best = dtc_db.best_moves(CAPTURE_IN_ONE)
    assert 5 in best and all(moves[p] == 0 for p in best)


def test_dtc_follows_its_definition(dtc_db):
    rng = np.random.default_rng(26)
    n = rng.integers(0, 11, size=1500)
    boards = np.stack([rng.multinomial(k, [1 / 12] * 12) for k in n])
    kinds = set()
    for b in boards.tolist():
        value, d = dtc_db.value(b), dtc_db.dtc(b)
        values, depths = dtc_db.move_values(b), dtc_db.move_dtcs(b)
        if value == 0:
            assert d is None, b
            kinds.add("zero")
            continue
        keeping = [depths[p] for p in range(6) if values[p] == value]
        assert all(k is not None and k >= 0 for k in keeping), b
        want = 0 if not keeping else 1 + (min(keeping) if value > 0 else max(keeping))
        assert d == want, b
        kinds.add("win" if value > 0 else "loss")
        # The best moves are the value-keeping moves that realize the depth.
        for p in dtc_db.best_moves(b):
            assert values[p] == value and depths[p] == d - 1, b
    assert kinds == {"zero", "win", "loss"}


def test_dtcs_batch_equals_single_probes_on_a_whole_layer(dtc_db):
    boards = layer_boards(5)
    assert boards.shape == (4368, 12)
    got = dtc_db.dtcs(boards)
    assert got.dtype == np.int32 and got.shape == (len(boards),)
    for b, d in zip(boards.tolist(), got.tolist()):
        single = dtc_db.dtc(b)
        assert d == (-1 if single is None else single), b
    # -1 exactly where the value is 0.
    assert np.array_equal(got == -1, dtc_db.values(boards) == 0)
    # Every integer type, in parallel: the same depths.
    for dtype in (np.int8, np.uint16, np.int32, np.int64, np.uint64):
        assert np.array_equal(dtc_db.dtcs(boards.astype(dtype)), got)
    assert np.array_equal(dtc_db.dtcs(boards.astype(">i4")), got)
    assert dtc_db.dtcs(np.zeros((0, 12), dtype=np.uint8)).shape == (0,)


def test_dtcs_bad_input(dtc_db):
    boards = np.zeros((10, 12), dtype=np.int32)
    boards[4, 0] = 49
    with pytest.raises(oware.InvalidPosition, match="row 4"):
        dtc_db.dtcs(boards)
    with pytest.raises(ValueError, match="shape"):
        dtc_db.dtcs(np.zeros((10, 11), dtype=np.uint8))
    with pytest.raises(TypeError):
        dtc_db.dtcs(np.zeros((10, 12), dtype=np.float64))
    with pytest.raises(oware.InvalidPosition):
        dtc_db.dtc([1, 2, 3])
    # Layer 11 is not built at all.
    with pytest.raises(oware.MissingLayer, match="row 1"):
        dtc_db.dtcs(np.array([[1] + [0] * 11, [11] + [0] * 11], dtype=np.uint8))


def test_dtc_missing_raises_and_names_the_build_option(db):
    # `db` is built without --dtc: its values answer, its depths raise MissingLayer.
    assert db.value(CAPTURE_IN_ONE) > 0
    with pytest.raises(oware.MissingLayer, match=r"layer 4 .*oware build --dtc"):
        db.dtc(CAPTURE_IN_ONE)
    with pytest.raises(oware.MissingLayer, match=r"row 0: .*oware build --dtc"):
        db.dtcs(np.array([CAPTURE_IN_ONE], dtype=np.uint8))
    with pytest.raises(oware.MissingLayer, match="oware build --dtc"):
        db.move_dtcs([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0])
    # Without the depths, the best moves are those of the best value, as before.
    values = db.move_values(CAPTURE_IN_ONE)
    assert db.best_moves(CAPTURE_IN_ONE) == [p for p in range(6) if values[p] == db.value(CAPTURE_IN_ONE)]


def test_engine_is_exact_inside_the_layers_and_estimates_above(db_dir, db):
    engine = oware.Engine(db_dir, rules="awari")
    assert engine.tables == 16
    a = engine.analyse(PUBLISHED, depth=4)
    assert a["exact"] and a["score"] == db.value(PUBLISHED)
    assert a["best_pit"] in db.best_moves(PUBLISHED)
    assert {m["pit"]: m["score"] for m in a["moves"]} == {
        p: v for p, v in enumerate(db.move_values(PUBLISHED)) if v is not None
    }
    start = [4] * 12
    a = engine.analyse(start, depth=5)
    assert not a["exact"] and a["depth"] == 5 and a["best_pit"] in range(6)
    assert a["pv"][0] == a["best_pit"] and len(a["moves"]) == 6
    # The same answer at a fixed depth with more threads.
    b = oware.Engine(db_dir, threads=2).analyse(start, depth=5)
    assert (a["best_pit"], a["score"], a["nodes"]) == (b["best_pit"], b["score"], b["nodes"])
    # With captured counts the score is the game's.
    g = engine.analyse([0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0], depth=3, captured=(20, 24))
    assert g["exact"] and g["score"] == -4 + db.value([0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0])
    # A game's history: move E returns to the position eleven plies before with the same side
    # to move; the game ends there, the stones split evenly, where the layers say -3.
    root = [0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    assert engine.analyse(root, depth=4)["score"] == -3
    h = engine.analyse(root, depth=4, history=GAME_SINCE_CAPTURE)
    assert h["exact"] and h["score"] == 0 and h["best_pit"] == 4
    with pytest.raises(oware.InvalidPosition):
        engine.analyse(root, depth=4, history=[[4, 4, 4]])
    # No tables: the evaluation alone; bad arguments raise.
    bare = oware.Engine(None)
    assert bare.tables is None and not bare.analyse(start, movetime_ms=50)["exact"]
    with pytest.raises(ValueError):
        engine.analyse(start, depth=0)
    with pytest.raises(ValueError):
        engine.analyse(start, captured=(1, 1))
    with pytest.raises(oware.InvalidPosition):
        engine.analyse([4, 4, 4])
    with pytest.raises(oware.Error):
        oware.Engine(db_dir, rules="chess")


def test_engine_arguments_are_bounded_and_its_line_is_a_list_of_pits(db_dir, db):
    # Issue 52, item 13. Old: `pv` was bytes; max_table=99 and movetime_ms=0 were taken where
    # the program refuses them; a negative depth, captured count or max_plies raised a bare
    # OverflowError; the stub left out `history`. New: a list of pits, ValueError naming the
    # argument, and the stub has `history`.
    engine = oware.Engine(db_dir)
    start = [4] * 12
    a = engine.analyse(start, depth=4)
    assert isinstance(a["pv"], list) and a["pv"], a
    assert all(type(p) is int and 0 <= p < 6 for p in a["pv"]) and a["pv"][0] == a["best_pit"]
    for kwargs, name in [
        ({"depth": -1}, "depth"), ({"depth": 0}, "depth"), ({"depth": 101}, "depth"), ({"depth": 2**80}, "depth"),
        ({"movetime_ms": 0}, "movetime_ms"), ({"movetime_ms": -5}, "movetime_ms"),
        ({"nodes": 0}, "nodes"), ({"nodes": -1}, "nodes"),
    ]:
        with pytest.raises(ValueError, match=name):
            engine.analyse(start, **kwargs)
    eight = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    for captured in [(-1, 41), (41, -1), (2**70, 0)]:
        with pytest.raises(ValueError, match=r"captured\[[01]\]"):
            engine.analyse(eight, depth=2, captured=captured)
    assert engine.analyse(eight, depth=2, captured=(20, 20))["best_pit"] in range(6)
    for kwargs, name in [
        ({"max_table": 99}, "max_table"), ({"max_table": -1}, "max_table"),
        ({"hash_mb": 0}, "hash_mb"), ({"hash_mb": -64}, "hash_mb"), ({"threads": -2}, "threads"),
    ]:
        with pytest.raises(ValueError, match=name):
            oware.Engine(db_dir, **kwargs)
    assert oware.Engine(db_dir, max_table=48).tables == 16
    with pytest.raises(ValueError, match="max_plies"):
        db.principal_variation(PUBLISHED, max_plies=-1)
    with pytest.raises(ValueError, match="max_stones"):
        oware.verify(db_dir, max_stones=-1)
    with pytest.raises(TypeError, match="depth"):
        engine.analyse(start, depth="3")
    # A history that is not the game's own: an empty board, a board of another stone count, a
    # position no move leads from to the next.
    root = [0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    for history in [[[0] * 12], [[4] * 12], GAME_SINCE_CAPTURE[:-1], GAME_SINCE_CAPTURE[1:] + GAME_SINCE_CAPTURE[:1]]:
        with pytest.raises(oware.InvalidPosition, match="history"):
            engine.analyse(root, depth=2, history=history)
    # The stub says what the binding takes and gives.
    import ast
    stub = ast.parse((Path(oware.__file__).parent / "__init__.pyi").read_text())
    engine_stub = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Engine")
    analyse = next(n for n in engine_stub.body if isinstance(n, ast.FunctionDef) and n.name == "analyse")
    assert [a.arg for a in analyse.args.args] == ["self", "board", "movetime_ms", "depth", "nodes", "captured", "history"]
    analysis = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Analysis")
    fields = {n.target.id: ast.unparse(n.annotation) for n in analysis.body if isinstance(n, ast.AnnAssign)}
    assert fields["pv"] == "List[int]" and set(fields) == set(a)
