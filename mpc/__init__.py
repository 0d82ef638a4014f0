"""mpc package."""
