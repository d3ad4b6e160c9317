"""The one user-facing error type: the CLI turns it into a one-line message and an exit code."""


class UserError(Exception):
    """A problem the user can fix (bad input, unusable test); never shown with a traceback."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class MisclassifiedOriginal(UserError):
    """The test does not give an original input the verdict it must have."""
