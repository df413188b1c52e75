"""The writer's settings are checked without its client library (no ``openai`` needed)."""

from __future__ import annotations

import pytest

from trueheart_core import ValidationError
from trueheart_core.integrations.writer import ChatSettings


@pytest.mark.parametrize(
    "timeout",
    [10**400, -(10**400), float("inf"), float("nan"), 0, 3601],
    ids=["huge", "-huge", "inf", "nan", "zero", "over"],
)
def test_a_timeout_out_of_range_is_a_validation_error(timeout: float) -> None:
    with pytest.raises(ValidationError) as caught:
        ChatSettings(model="m", api_key="k", timeout=timeout)
    assert str(caught.value) == "timeout: must be a number of seconds from 0 through 3600"
    assert caught.value.__context__ is None
