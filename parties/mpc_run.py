"""Run plan of the MPC secret-shared shuffler (``--shuffler mpc``); the roles live with the
shuffler in ``mpc.mpc_shuffler``."""

from mpc.mpc_shuffler import MpcPlan

__all__ = ["MpcPlan"]
