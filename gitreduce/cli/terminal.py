"""What the terminal is given to show: text from strangers is shown, never obeyed.

The reduced programs, the test's output (signatures, excerpts in error
messages) and the names of files in a commit are data from strangers. Written
to a terminal as they are, an escape sequence inside a fuzzer's string literal
would retitle the window, clear the screen, or (on some terminals) write to
the clipboard. Every control character but tab and newline is therefore shown
as its Unicode control picture (`ESC` as `␛`), one character for one, so
offsets into the text (the marks of a diff's tokens) stay where they were.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

_C0_PICTURES = 0x2400  # U+2400 SYMBOL FOR NULL: the C0 controls' pictures follow in order
_SHOWN = {
    **{code: chr(_C0_PICTURES + code) for code in range(0x20) if chr(code) not in "\t\n"},
    0x7F: "\u2421",  # SYMBOL FOR DELETE
    # C1 controls: a terminal may read U+009B as CSI, the start of an escape sequence
    **dict.fromkeys(range(0x80, 0xA0), "\ufffd"),
}


def shown(text: str) -> str:
    """`text` with every control character but tab and newline made visible."""
    return text.translate(_SHOWN)


class Terminal(Console):
    """A rich Console whose `print` shows the control characters of the strings it is
    given (see `shown`); styles, tables and status lines are rich's own as before.

    Text put into a `Table` or a `Text` does not pass through here: its maker
    calls `shown` on what came from strangers.
    """

    def print(self, *objects: Any, **options: Any) -> None:
        super().print(
            *(shown(item) if isinstance(item, str) else item for item in objects), **options
        )
