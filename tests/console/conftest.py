"""The console's browser tests share one headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by Selenium) for the whole run; each module starts the brokers it needs.  Screenshots of the
pages go to ``build/console-screenshots/`` (the README's come from there)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from console_pages import TIMEOUT_S
from peers import require_chromium

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,1000")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    chromium, chromedriver = require_chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="kbroker-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    driver.set_page_load_timeout(TIMEOUT_S)
    try:
        yield driver
    finally:
        driver.quit()
        import shutil

        shutil.rmtree(profile, ignore_errors=True)
