"""(filled by its area)."""
__all__ = ()
