"""The web page of `oware serve` in a real browser: headless Chromium driven by Selenium.

It builds awari layers 0..16 into a temporary directory, starts `oware serve` on a free port,
loads the page, reads the values shown on the houses, plays a move by clicking, undoes it, sets
up a position by clicking, plays against perfect play, and saves screenshots under
`target/web-screenshots/` (kept out of git) for people to look at.

Needs: the `oware` binary (OWARE_BIN, default target/release/oware), Chromium and ChromeDriver
(Debian: chromium, chromium-driver) and `pip install selenium pytest`.
"""

import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("OWARE_BIN", str(ROOT / "target" / "release" / "oware"))
SHOTS = ROOT / "target" / "web-screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="chromium and chromedriver are not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    tmp = tempfile.mkdtemp(prefix="oware-web-")
    subprocess.run([BIN, "build", "--rules", "awari", "--max-stones", "16", "--dir", tmp, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "--dir", tmp, "--port", str(port)], stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/api/v1/info", timeout=1).read()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        raise RuntimeError("oware serve did not start")
    yield base
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1000,900"]:
        opts.add_argument(flag)
    opts.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="oware-chromium-"))
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield driver
    driver.quit()


def api(base, query):
    return json.loads(urllib.request.urlopen(base + "/api/v1/position?" + query).read())


def wait_shown(driver, after=0):
    """Waits until the page has shown the values of an analysis newer than `after`; returns its number."""
    from selenium.webdriver.support.ui import WebDriverWait

    def shown(d):
        v = d.find_element("id", "status").get_attribute("data-shown")
        return int(v) if v and int(v) > after else False

    return WebDriverWait(driver, 15).until(shown)


def house_values(driver):
    out = {}
    for h in "ABCDEFabcdef":
        e = driver.find_element("id", "house-" + h)
        val = e.find_element("css selector", ".val")
        out[h] = {
            "count": int(e.find_element("css selector", ".count").text),
            "value": val.text,
            "class": val.get_attribute("class"),
        }
    return out


def test_page_shows_values_and_plays(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    pits = "1,1,1,1,1,2,4,2,3,0,0,0"
    browser.get(server + "/?pits=" + pits + "&rules=awari")
    seq = wait_shown(browser)
    first_ms = float(browser.find_element("id", "status").get_attribute("data-first-ms"))
    ms = float(browser.find_element("id", "status").get_attribute("data-ms"))
    print(f"page: values shown {first_ms:.1f} ms after the script started; the analysis request took {ms:.1f} ms")
    browser.save_screenshot(str(SHOTS / "1-position.png"))
    want = api(server, "pits=" + pits + "&rules=awari")
    # The API's own contract on the example: value 0, moves -1 -1 -2 -2 -2 0, F captures 3.
    assert want["value"] == 0
    assert [(m["pit"], m["house"], m["captured"], m["value"]) for m in want["moves"]] == [
        (0, "A", 0, -1), (1, "B", 0, -1), (2, "C", 0, -2), (3, "D", 0, -2), (4, "E", 0, -2), (5, "F", 3, 0)]
    shown = house_values(browser)
    # South to move: the board as drawn, and every legal move's value on its house.
    assert [shown[h]["count"] for h in "ABCDEF"] == want["absolute"][:6]
    assert [shown[h]["count"] for h in "abcdef"] == want["absolute"][6:]
    for m in want["moves"]:
        cell = shown[m["house"]]
        assert cell["value"].split(" ")[0] in (f"{m['value']:+d}" if m["value"] else "0",), (m, cell)
        assert m["result"] in cell["class"], (m, cell)
    assert "best: F" in browser.find_element("id", "status").text
    rows = browser.find_elements("css selector", "#line tr")
    assert len(rows) == 1 + len(want["principal_variation"]), len(rows)
    assert rows[1].text.split()[:4] == ["1", "1", "1", "1"], rows[1].text

    # Click F (a capture of 3): North to move, the values of the child.
    browser.find_element("id", "house-F").click()
    seq = wait_shown(browser, seq)
    child = want["moves"][5]["child"]
    want2 = api(server, "pits=" + ",".join(map(str, child)) + "&to_move=north&rules=awari")
    shown = house_values(browser)
    assert [shown[h]["count"] for h in "ABCDEF"] == want2["absolute"][:6]
    for m in want2["moves"]:
        assert m["result"] in shown[m["house"]]["class"], (m, shown[m["house"]])
    # 16 stones on the board, captured unknown: the stores show "?".
    assert browser.find_element("id", "store-south").text.startswith("?")
    assert "North to move" in browser.find_element("id", "status").text
    browser.save_screenshot(str(SHOTS / "2-after-F.png"))

    # Undo: back to the first position.
    browser.find_element("id", "undo").click()
    seq = wait_shown(browser, seq)
    assert [house_values(browser)[h]["count"] for h in "ABCDEF"] == [1, 1, 1, 1, 1, 2]
    assert "South to move" in browser.find_element("id", "status").text


def test_setup_and_perfect_play(server, browser):
    browser.get(server + "/?rules=awari")
    from selenium.webdriver.support.ui import WebDriverWait
    # The start position is not covered by layers 0..16: the page gives the engine's view and still
    # offers the moves.
    WebDriverWait(browser, 15).until(lambda d: "Engine: best" in d.find_element("id", "status").text)
    assert "above the built layers (0..16)" in browser.find_element("id", "status").text
    assert len(browser.find_elements("css selector", ".house.playable")) == 6
    # Set up S: 0 0 0 0 2 1 / N: 1 0 0 0 0 0, South to move, by clicking.
    browser.find_element("id", "mode-setup").click()
    browser.find_element("id", "clear").click()
    for h, k in [("E", 2), ("F", 1), ("a", 1)]:
        for _ in range(k):
            browser.find_element("id", "house-" + h).click()
    browser.find_element("id", "cap-s").send_keys("20")
    browser.find_element("id", "cap-n").send_keys("24")
    browser.find_element("id", "done").click()
    seq = wait_shown(browser)
    want = api(server, "south=0,0,0,0,2,1&north=1,0,0,0,0,0&to_move=south&captured=20:24&rules=awari")
    shown = house_values(browser)
    for m in want["moves"]:
        assert m["result"] in shown[m["house"]]["class"]
    status = browser.find_element("id", "status").text
    assert "Best play ends South" in status, status
    browser.save_screenshot(str(SHOTS / "3-setup.png"))
    # Perfect play for North: after South's F, North answers by itself with its best move.
    browser.get(server + "/?pits=1,1,1,1,1,2,4,2,3,0,0,0&computer=north")
    seq = wait_shown(browser)
    browser.find_element("id", "house-F").click()
    WebDriverWait(browser, 15).until(lambda d: len(d.find_element("id", "history").text.split()) >= 3)
    moves = browser.find_element("id", "history").text.split()
    assert moves[:2] == ["1.", "F"], moves
    want = api(server, "pits=5,0,3,0,0,0,1,1,1,1,1,0&to_move=north")
    assert moves[2] in want["best_houses"], (moves, want["best_houses"])
    WebDriverWait(browser, 15).until(lambda d: "South to move" in d.find_element("id", "status").text)
    browser.save_screenshot(str(SHOTS / "4-perfect-play.png"))
    # Undo takes back the computer's answer and South's move together.
    seq = int(browser.find_element("id", "status").get_attribute("data-shown"))
    browser.find_element("id", "undo").click()
    wait_shown(browser, seq)
    assert browser.find_element("id", "history").text == "(no moves yet)"


def test_game_end_clears_the_board_and_gives_the_score(server, browser):
    from selenium.webdriver.support.ui import WebDriverWait
    # South to move has no stone: North takes the 2 left. They stayed on the board while the
    # status counted them.
    browser.get(server + "/?south=0,0,0,0,0,0&north=0,0,1,0,0,1&to_move=south&captured=23:23&rules=awari")
    wait_shown(browser)
    status = browser.find_element("id", "status").text
    assert "South has no stone to move: North takes the 2 left on the board" in status, status
    assert "Final score South 23 : North 25, North wins" in status, status
    shown = house_values(browser)
    assert all(shown[h]["count"] == 0 for h in "ABCDEFabcdef"), shown
    assert browser.find_element("id", "store-north").text.startswith("25")
    # South's only move captures North's last stones: North cannot move, the game ends.
    browser.get(server + "/?south=0,0,0,0,0,1&north=1,0,0,0,0,0&to_move=south&captured=23:23&rules=awari")
    seq = wait_shown(browser)
    browser.find_element("id", "house-F").click()
    wait_shown(browser, seq)
    status = browser.find_element("id", "status").text
    assert "North has no stone to move" in status and "Final score South 25 : North 23, South wins" in status, status


def test_the_computer_plays_beyond_the_layers_with_the_engine(server, browser):
    from selenium.webdriver.support.ui import WebDriverWait
    # North to move on the full board (layer 48 is not built), the computer plays North: the
    # engine chooses its move, and the page shows the engine's score marked as an estimate.
    browser.get(server + "/?pits=4,4,4,4,4,4,4,4,4,4,4,4&to_move=north&computer=north&rules=awari")
    WebDriverWait(browser, 30).until(lambda d: d.find_element("id", "history").text.startswith("1."))
    moves = browser.find_element("id", "history").text.split()
    assert moves[0] == "1." and moves[1] in "abcdef", moves
    WebDriverWait(browser, 30).until(lambda d: "South to move. Engine: best" in d.find_element("id", "status").text)
    status = browser.find_element("id", "status").text
    assert "for South" in status and "an estimate" in status, status
    # The server's error text named its directory (/tmp/oware-web-…/awari): never shown.
    assert "oware-web-" not in status and "/tmp" not in status, status
    assert "estimates, not exact values" in browser.find_element("id", "line-end").text
    # South (the user) can move.
    assert len(browser.find_elements("css selector", ".house.playable")) == 6
    browser.save_screenshot(str(SHOTS / "5-engine-above-the-layers.png"))


def test_the_start_shows_the_engines_view_and_scores(server, browser):
    # The 48-stone start, above layers 0..16. Old: the status began "layer 48 of awari is not built
    # in the server's awari database" (an error's words) and the houses showed no value.
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.get(server + "/?rules=awari")
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(browser, 30).until(lambda d: "Engine:" in d.find_element("id", "status").text)
    status = browser.find_element("id", "status")
    text = status.text
    assert "not built" not in text and "error" not in status.get_attribute("class"), text
    # The engine's view: best move, score, estimate or exact.
    m = re.match(r"South to move\. Engine: best ([A-F]), final score ([+-]?\d+(?:\.\d+)?) for South, (an estimate|exact)", text)
    assert m, text
    assert "48 stones: above the built layers (0..16)" in text, text
    best = m.group(1)
    shown = house_values(browser)
    # Every move's engine score on its house, marked "~" when an estimate ("≤" when refuted).
    for h in "ABCDEF":
        cell = shown[h]
        v = re.fullmatch(r"([~≤≥]?)([+-]?\d+(?:\.\d)?)", cell["value"])
        assert v, (h, cell)
        assert ("estimate" in cell["class"]) == (v.group(1) != ""), (h, cell)
        x = float(v.group(2))
        assert ("win" if x > 0 else "draw" if x == 0 else "loss") in cell["class"], (h, cell)
    assert any(shown[h]["value"].startswith("~") for h in "ABCDEF"), shown
    assert all(shown[h]["value"] == "" for h in "abcdef"), shown
    assert "best" in browser.find_element("id", "house-" + best).get_attribute("class")
    browser.save_screenshot(str(SHOTS / "6-engine-at-the-start.png"))


def test_board_fits_a_narrow_screen(server, browser):
    # A phone's width (a headless window cannot be made narrower than 500 px: emulate the screen).
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 400, "height": 900, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.get(server + "/?pits=1,1,1,1,1,2,4,2,3,0,0,0&rules=awari")
        wait_shown(browser)
        inner = browser.execute_script("return window.innerWidth")
        right = browser.execute_script("return document.getElementById('board').getBoundingClientRect().right")
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
        assert inner == 400, inner
        # The board overflowed: the page was 512 px wide in 400.
        assert right <= inner and scroll <= inner, (right, scroll, inner)
        for h in "Aa":
            r = browser.execute_script(f"return document.getElementById('house-{h}').getBoundingClientRect().right")
            assert r <= inner, (h, r, inner)
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SHOTS / "5-narrow.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
