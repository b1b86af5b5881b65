"""External peers run in their own environments (never pinned into objpert's)."""

from objpert.apps._external.diffprivlib_env import (
    DIFFPRIVLIB_REQUIREMENTS,
    ensure_env,
    run_diffprivlib,
)

__all__ = ["DIFFPRIVLIB_REQUIREMENTS", "ensure_env", "run_diffprivlib"]
