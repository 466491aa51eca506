"""The errors ``deuteron explain`` turns into one line and exit code 2."""

from __future__ import annotations

from deuteron.model.errors import DeuteronError


class ExplainError(DeuteronError):
    """Bad input: an unknown target, no kernel launched, a missing tool."""


class KernelCompileError(ExplainError):
    """Triton rejected a kernel; the message carries the compiler's words and the source line."""

    def __init__(self, kernel: str, message: str, file: str | None, line: int | None) -> None:
        where = f"{file}:{line}: " if file and line else ""
        super().__init__(f"{where}kernel {kernel} does not compile: {message}")
        self.kernel = kernel
        self.compiler_message = message
        self.file = file
        self.line = line
