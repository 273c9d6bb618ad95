"""The settings file's alerts: section: read over the defaults, each problem located at FILE:LINE:COL in one
sentence, the rest applied."""

from spectui.core.alerts import DEFAULT_RULES
from spectui.core.settings import load_settings


def test_alerts_section_problems_are_located_and_the_rest_applies(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("theme: textual-dark\nalerts:\n  gpu_memory: {fraction: 1.5}\n  gpu_mem: true\n  bell: true\n"
                    "  below_break_even: {for_s: 60}\n")
    s = load_settings(path)
    assert [str(e) for e in s.errors] == [
        f"{path}:3:26: alerts.gpu_memory.fraction must be above 0 and at most 1",
        f"{path}:4:3: unknown alert rule 'gpu_mem'; did you mean 'gpu_memory'?",
    ]
    assert s.theme == "textual-dark" and s.alerts.bell
    assert s.alerts.rules["below_break_even"].for_s == 60
    assert s.alerts.rules["gpu_memory"] == DEFAULT_RULES["gpu_memory"]


def test_no_alerts_section_is_the_defaults(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("theme: textual-dark\n")
    s = load_settings(path)
    assert s.errors == [] and dict(s.alerts.rules) == DEFAULT_RULES and not s.alerts.bell
