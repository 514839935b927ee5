"""The browser on one console page, for the console's tests: open, find, fill, wait, screenshot."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "console-screenshots"
TIMEOUT_S = 30


def sasl_console_broker(directory: Path, passwords: dict[str, str], settings: dict[str, Any],
                        extra_args: list[str] | None = None) -> Any:
    """A started broker with its console whose listener requires SASL: the users ``passwords`` (``admin``
    among them, a super user and the brokers' own login), the authorizer on and nothing allowed without an
    ACL; ``settings`` and ``extra_args`` added."""
    from broker.testing.harness import BrokerProcess

    users = directory / "users.txt"
    users.write_text("".join(f"{u}:{p}\n" for u, p in passwords.items()))
    settings = {"sasl.users.file": users, "authorizer.enabled": "true", "super.users": "User:admin",
                "allow.everyone.if.no.acl.found": "false", "inter.broker.sasl.username": "admin",
                "inter.broker.sasl.password": passwords["admin"], **settings}
    args = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    return BrokerProcess(directory / "data", listeners=["SASL_PLAINTEXT"], extra_args=args + (extra_args or []),
                         console=True).start()


class Page:
    """The browser on one console: open pages, find things, wait for them, take screenshots."""

    def __init__(self, driver: Any, base: str) -> None:
        self.driver = driver
        self.base = base.rstrip("/")
        # the shared browser may still show an earlier test's page, refreshing it from a console that has
        # stopped since: leave it, so its failed refreshes cannot land among this test's errors
        driver.get("about:blank")

    def open(self, path: str) -> Any:
        self.driver.get(self.base + path)
        return self.driver

    def css(self, selector: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def all(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, selector))

    def text(self, selector: str = "main") -> str:
        from selenium.common.exceptions import NoSuchElementException

        try:
            return str(self.css(selector).text)
        except NoSuchElementException:
            body = self.driver.find_element("css selector", "body").text
            raise AssertionError(f"no {selector} on {self.driver.current_url}:\n{body[:3000]}") from None

    def wait(self, predicate: Callable[[], Any], what: str, timeout: float = TIMEOUT_S) -> Any:
        """Poll ``predicate`` (page elements may be replaced meanwhile) until it is true."""
        from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                value = predicate()
                if value:
                    return value
                last = value
            except (StaleElementReferenceException, WebDriverException) as exc:
                if not isinstance(exc, StaleElementReferenceException) and not any(
                        gone in str(exc) for gone in ("no such element", "does not belong to the document")):
                    raise
                last = exc
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what} (last: {last!r}) on {self.driver.current_url}:\n"
                             f"{self.text('body')[:3000]}")

    def fill(self, selector: str, value: str) -> None:
        field = self.css(selector)
        field.clear()
        field.send_keys(value)

    def choose(self, selector: str, value: str) -> None:
        from selenium.webdriver.support.ui import Select

        Select(self.css(selector)).select_by_value(value)

    def submit(self, selector: str) -> None:
        """Click a form's button and wait for the next page."""
        old = self.css("html")
        self.css(selector).click()
        self.wait(lambda: _stale(old), "the next page")

    def errors(self) -> list[str]:
        """The JavaScript console's errors since the last look (SEVERE entries)."""
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def no_alert(self) -> bool:
        from selenium.common.exceptions import NoAlertPresentException

        try:
            self.driver.switch_to.alert  # noqa: B018 - raises when there is none
        except NoAlertPresentException:
            return True
        return False

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path


def _stale(element: Any) -> bool:
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    return False
