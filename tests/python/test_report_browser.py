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
    assert {"queues", "throughput", "links", "fct"} <= names
    # `fabricsim report DIR` rebuilds the page from the stored files.
    page.unlink()
    r = subprocess.run([sys.executable, "-m", "fabricsim", "report", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _check_page(browser, page, min_plots=4)


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
