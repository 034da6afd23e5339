"""The exception types that the CLI turns into a one-line message and an exit code."""


class NmtkitError(Exception):
    """A user-facing error: bad input, bad option, missing file.

    The message names the file, line or option at fault; ``exit_code`` is what the
    command exits with (2 for usage errors, 1 for everything else).
    """

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that clean-ups run (temporary files removed) before exit 143."""
