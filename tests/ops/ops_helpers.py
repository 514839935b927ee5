"""Helpers of the operations tests: free ports, scraping and parsing /metrics, waiting."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Scrape:
    """One parsed /metrics page: ``value(name, **labels)``, ``series(name)``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: list[Any] = [s for fam in text_string_to_metric_families(text) for s in fam.samples]

    def series(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(dict(s.labels), s.value) for s in self.samples if s.name == name]

    def value(self, name: str, default: float | None = None, **labels: str) -> float:
        for s in self.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
        if default is not None:
            return default
        raise AssertionError(f"no sample {name}{labels} in /metrics")

    def label_values(self, name: str, label: str) -> set[str]:
        return {s.labels[label] for s in self.samples if s.name == name and label in s.labels}


def scrape(port: int) -> Scrape:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return Scrape(resp.read().decode())


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.05, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


