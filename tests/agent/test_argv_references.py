"""``${VAR}`` in a server's argv words is filled in from the host's environment at launch, as in
env values, so a profile can hold ``api-key: ${SGLANG_API_KEY}`` instead of the key."""

from __future__ import annotations

import pytest

from spectui.agent.servers.process import LaunchError, expand_argv


def test_references_are_filled_from_the_host_environment():
    argv = ["python3", "-m", "sglang.launch_server", "--api-key", "${SGLANG_API_KEY}", "--model-path", "${M}/x"]
    host = {"SGLANG_API_KEY": "sk-host", "M": "/models"}
    assert expand_argv(argv, host) == ["python3", "-m", "sglang.launch_server", "--api-key", "sk-host",
                                       "--model-path", "/models/x"]


def test_words_without_references_are_untouched():
    argv = ["python3", "--json-model-override-args", '{"a": "$notaref"}', "--x", "$Y"]
    assert expand_argv(argv, {}) == argv


def test_a_missing_variable_names_the_flag_and_never_a_value():
    with pytest.raises(LaunchError) as info:
        expand_argv(["python3", "--api-key", "${SGLANG_API_KEY}"], {"OTHER": "secret-value"})
    assert str(info.value) == "--api-key refers to ${SGLANG_API_KEY}, which is not set on the host"
