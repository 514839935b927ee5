"""Fixtures of the security tests (helpers live in ``security_helpers``)."""

from __future__ import annotations

import pytest
from security_helpers import Pki, make_pki, openssl_available


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    if not openssl_available():
        pytest.skip("the openssl command line is needed to make test certificates")
    return make_pki(tmp_path_factory.mktemp("pki"))
