"""The HTML reports in a real headless Chromium: they load without console
errors and show their plots. Needs Debian's `chromium` and `chromium-driver`
(`.ci/run` installs them) and selenium (a test extra); skipped otherwise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fabricsim

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None, reason="chromium and chromedriver are not installed"
)


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    yield driver
    driver.quit()


def _check_page(driver, page: Path, min_plots: int) -> None:
    from selenium.webdriver.common.by import By

    driver.get(page.as_uri())
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors
    assert not driver.find_elements(By.CSS_SELECTOR, ".section-error")
    # No table wider than the column it sits in (a wide one scrolls inside its own box).
    too_wide = driver.execute_script(
        "return [...document.querySelectorAll('table')].filter(t => "
        "t.getBoundingClientRect().width > t.parentElement.getBoundingClientRect().width + 1).length")
    assert too_wide == 0, f"{too_wide} table(s) wider than the page"
    # A verdict never looks like a warning: verdict boxes are not banners.
    assert not driver.find_elements(By.CSS_SELECTOR, ".banner .verdict, .verdict.banner")
    plots = driver.find_elements(By.CSS_SELECTOR, "figure[data-plot] svg")
    assert len(plots) >= min_plots
    for svg in plots:
        size = svg.size
        assert size["width"] > 100 and size["height"] > 100, size
        # Drawn, not empty: matplotlib paths inside.
        assert svg.find_elements(By.TAG_NAME, "path")


def test_run_report_loads_and_shows_its_plots(core, browser, tmp_path):
    out = tmp_path / "run"
    fabricsim.run(fabricsim.load(ROOT / "scenarios" / "leafspine-enterprise.yaml")).write(out)
    page = out / "report.html"
    _check_page(browser, page, min_plots=4)
    # The same plots sit beside the page as SVG files.
    names = {p.stem for p in (out / "plots").glob("*.svg")}
    assert {"queues", "throughput", "carried", "largest-flows", "links", "fct", "fct-cdf", "slowdown"} <= names
    # Readable at a glance: what was simulated and what matters are on top, the
    # counters collapsed at the end.
    from selenium.webdriver.common.by import By

    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert headings[:2] == ["What was simulated", "What matters in this run"] and headings[-1] == "All counters"
    counters = browser.find_element(By.CSS_SELECTOR, "details table")
    assert not counters.is_displayed()
    # `fabricsim report DIR` rebuilds the page from the stored files.
    page.unlink()
    r = subprocess.run([sys.executable, "-m", "fabricsim", "report", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _check_page(browser, page, min_plots=4)


def test_a_run_cut_at_its_drain_limit_shows_a_visible_warning_banner(core, browser, tmp_path):
    from selenium.webdriver.common.by import By

    sc = fabricsim.loads(
        "name: cut\nduration: 1ms\ndrain_limit: 5ms\n"
        "topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}\n"
        "traffic: [{kind: tcp_bulk, src: h1, dst: h0, size: 20MB}]\n"
    )
    out = tmp_path / "cut"
    fabricsim.run(sc).write(out)
    browser.get((out / "report.html").as_uri())
    banner = browser.find_element(By.CSS_SELECTOR, "[role=alert]")
    assert banner.is_displayed() and "drain limit reached" in banner.text
    # Above the results: the banner comes before the first result section.
    first = browser.find_elements(By.TAG_NAME, "h2")[0]
    assert banner.location["y"] < first.location["y"]


def test_sweep_report_loads_and_shows_its_plots(core, browser, tmp_path):
    out = tmp_path / "sweep"
    r = subprocess.run(
        [sys.executable, "-m", "fabricsim", "sweep", str(ROOT / "scenarios" / "leafspine-enterprise.yaml"),
         "--grid", "load=30%,60%", "--grid", "network.switch.device=nexus-ib-5mb,jericho-deep",
         "--out", str(out), "--workers", "2", "--no-progress"],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    _check_page(browser, out / "report.html", min_plots=2)
    assert list((out / "plots").glob("*.svg"))
    (out / "report.html").unlink()
    r = subprocess.run([sys.executable, "-m", "fabricsim", "report", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _check_page(browser, out / "report.html", min_plots=2)


def test_reproduction_page_loads_and_shows_one_plot_per_figure(core, browser, tmp_path):
    from selenium.webdriver.common.by import By

    from fabricsim.reproductions.job import run_reproduction

    out = run_reproduction("tolly-lightfleet", tmp_path / "tolly", workers=2)
    assert out.failed == 0, out.errors
    _check_page(browser, out.page, min_plots=3)
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert "Latency per frame size (ping-pong, half round trip)" in headings
    assert "Power at idle, 10% and 100% load" in headings and "Multicast: native vs unicast copies" in headings
    # Every figure is followed by words on what it shows; the report's claims sit
    # beside the simulated values with computed verdicts, styled apart from warnings.
    assert browser.find_elements(By.CSS_SELECTOR, "section p")
    claims = browser.find_elements(By.CSS_SELECTOR, "#claims table.claims tr")
    assert len(claims) > 10
    assert "matches" in browser.find_element(By.ID, "claims").text
    verdicts = browser.find_elements(By.CSS_SELECTOR, "#claims .verdict")
    banner = browser.find_elements(By.CSS_SELECTOR, ".banner")
    if verdicts and banner:
        assert verdicts[0].value_of_css_property("background-color") != banner[0].value_of_css_property(
            "background-color")
