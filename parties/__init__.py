"""parties package."""
