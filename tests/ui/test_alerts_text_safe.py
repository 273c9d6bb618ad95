"""The alert screen (``!``) shows host text (an alert's rule, message and reason, as a replayed recording can carry
them) with its control characters visible: an OSC title or a screen clear in a rule reaches no terminal."""

from __future__ import annotations

from spectui.ui.screens.alerts import alert_lines

OSC_TITLE = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J"


def test_every_field_of_an_alert_line_shows_its_escapes_instead_of_obeying_them():
    rule = f"below_break_even{OSC_TITLE}"
    active = [{"rule": rule, "message": f"accept length{CLEAR} 1.2", "since": 100.0}]
    history = [{"kind": "fired", "rule": rule, "message": "x", "at": 100.0},
               {"kind": "ended", "rule": rule, "message": "x", "at": 160.0, "reason": f"stopped{OSC_TITLE}",
                "fired_at": 100.0, "ended_at": 160.0}]
    lines = alert_lines(active, history, now=200.0)
    assert lines and all("\x1b" not in line and "\x07" not in line for line in lines), lines
    assert any("below_break_even" in line for line in lines)
