"""The user-facing error type, which the CLI turns into a one-line message and an exit code,
and the interruption a reduction stops with."""

from gitreduce.core.outcome import Verdict


class UserError(Exception):
    """A problem the user can fix (bad input, unusable test); never shown with a traceback."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class MisclassifiedOriginal(UserError):
    """The test does not give an original input the verdict it must have; `given`: the one
    it gives (a pair whose seed shows the failure while its variant gets the seed's verdict
    is told it looks swapped)."""

    def __init__(
        self, message: str, exit_code: int | None = None, *, given: Verdict | None = None
    ) -> None:
        super().__init__(message, exit_code)
        self.given = given


class Interrupted(Exception):
    """The reduction was asked to stop (Ctrl-C, SIGTERM): raised at a point the main thread
    chose, never asynchronously, so the best result so far can still be written."""
